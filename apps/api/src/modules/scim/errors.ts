/**
 * A SCIM error (RFC 7644 section 3.12): the HTTP status, the `scimType` where the RFC names one,
 * and a detail for the integrator. The SCIM adapter writes it as
 * `{ schemas: [urn:ietf:params:scim:api:messages:2.0:Error], status, scimType, detail }`.
 */
export class ScimError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 429 | 500 | 501,
    readonly detail: string,
    readonly scimType?:
      | 'invalidFilter'
      | 'tooMany'
      | 'uniqueness'
      | 'mutability'
      | 'invalidSyntax'
      | 'invalidPath'
      | 'noTarget'
      | 'invalidValue'
      | 'invalidVers'
      | 'sensitive',
  ) {
    super(detail);
  }
}
