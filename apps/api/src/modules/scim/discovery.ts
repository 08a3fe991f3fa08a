import { ENTERPRISE_USER_SCHEMA, GROUP_SCHEMA, LIST_SCHEMA, USER_SCHEMA } from './resources.ts';
import { MAX_COUNT } from './service.ts';

// SCIM discovery (RFC 7644 section 4): what svc supports, for providers that ask before they
// provision. Static but for the directory's base URL.

const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export function serviceProviderConfig(base: string): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${base.replace(/\/scim\/v2\/.*$/, '')}/docs/enterprise`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: "The directory's token, shown once when the directory is created or its token rotated",
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string): Record<string, unknown>[] {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A person: a membership of the organization',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_USER_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: "A group: its members get the role the directory's mapping gives it",
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

type Attribute = Record<string, unknown>;

function attr(name: string, opts: Partial<Attribute> & { type?: string } = {}): Attribute {
  return {
    name,
    type: 'string',
    multiValued: false,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...opts,
  };
}

export function schemas(base: string): Record<string, unknown>[] {
  return [
    {
      schemas: [SCHEMA_SCHEMA],
      id: USER_SCHEMA,
      name: 'User',
      description: 'User Account',
      attributes: [
        attr('userName', { required: true, uniqueness: 'server' }),
        attr('externalId', { caseExact: true }),
        attr('displayName'),
        attr('name', {
          type: 'complex',
          subAttributes: [attr('givenName'), attr('familyName'), attr('formatted', { mutability: 'readOnly' })],
        }),
        attr('emails', {
          type: 'complex',
          multiValued: true,
          subAttributes: [attr('value'), attr('type'), attr('primary', { type: 'boolean' })],
        }),
        attr('active', { type: 'boolean' }),
        attr('groups', { type: 'complex', multiValued: true, mutability: 'readOnly', subAttributes: [attr('value'), attr('display')] }),
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${USER_SCHEMA}` },
    },
    {
      schemas: [SCHEMA_SCHEMA],
      id: GROUP_SCHEMA,
      name: 'Group',
      description: 'Group',
      attributes: [
        attr('displayName', { required: true }),
        attr('externalId', { caseExact: true }),
        attr('members', { type: 'complex', multiValued: true, subAttributes: [attr('value', { caseExact: true }), attr('display')] }),
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${GROUP_SCHEMA}` },
    },
  ];
}

/** A list of discovery resources (ResourceTypes, Schemas) as RFC 7644 section 4 answers it. */
export function listOf(resources: Record<string, unknown>[]): Record<string, unknown> {
  return { schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources };
}
