import type { TProductPermissionOption, TTokenEndpointAuthMethod } from '@svc/contracts/applications';
import { useQuery } from '@tanstack/react-query';
import type { UseFormRegisterReturn } from 'react-hook-form';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Field, FieldSet } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useTRPC } from '../../trpc.ts';

const AUTH_METHODS: SelectOption<TTokenEndpointAuthMethod>[] = [
  { value: 'client_secret_basic', label: 'secret key (client_secret_basic)' },
  { value: 'private_key_jwt', label: 'signed assertion (private_key_jwt)' },
];

type Props = {
  organizationSlug: string;
  method: TTokenEndpointAuthMethod;
  onMethodChange: (method: TTokenEndpointAuthMethod) => void;
  /** `form.register('jwks')` and `form.register('jwksUri')`: text fields, empty for none. */
  jwks: UseFormRegisterReturn;
  jwksUri: UseFormRegisterReturn;
  /** The chosen permissions (`form.watch('permissions')`) and how to replace them. */
  permissions: readonly string[];
  onPermissionsChange: (next: string[]) => void;
  errors: { method?: string; jwks?: string; jwksUri?: string; permissions?: string };
  /** `<testId>-auth-method`, `<testId>-jwks`, `<testId>-jwks-uri`, `<testId>-permissions`. */
  testId: string;
};

/**
 * A machine client's own settings in the create and settings dialogs: how it authenticates at the
 * token endpoint, its public keys for private_key_jwt (a pasted JWK Set or the URL it is
 * published at), and the product permissions it is granted, by API resource. The API checks the
 * keys and that you hold the permissions; its message shows in the dialog's error panel.
 */
export function MachineClientFields(props: Props) {
  const { method, errors, testId } = props;
  const lines = { rows: 6, spellCheck: false, className: 'textarea--mono' } as const;
  return (
    <>
      <Field
        label="Token endpoint authentication"
        hint="Secret key: the client sends its secret key (HTTP Basic). Signed assertion: a JWT signed with one of its keys (RFC 7523); the secret key then serves svc's backend API only."
        error={errors.method}
      >
        {(control) => (
          <Select
            {...control}
            value={method}
            options={AUTH_METHODS}
            testId={`${testId}-auth-method`}
            onValueChange={props.onMethodChange}
          />
        )}
      </Field>
      {method === 'private_key_jwt' && (
        <>
          <Field
            label="Public keys (JWK Set)"
            hint={
              <>
                Paste <code>{'{ "keys": [ … ] }'}</code>: public RSA (2048 bits or more), EC P-256/P-384 or Ed25519 keys, at most 10, each
                with its own <code>kid</code>. Or leave it empty and give a JWKS URI.
              </>
            }
            error={errors.jwks}
            testId={`${testId}-jwks`}
          >
            {(control) => <textarea {...control} {...lines} data-testid={`${testId}-jwks`} {...props.jwks} />}
          </Field>
          <Field
            label="JWKS URI"
            hint="Where the client publishes its public keys: an https URL on a public address. Empty when the keys are pasted above."
            error={errors.jwksUri}
            testId={`${testId}-jwks-uri`}
          >
            {(control) => (
              <input
                {...control}
                placeholder="https://jobs.example.com/.well-known/jwks.json"
                data-testid={`${testId}-jwks-uri`}
                {...props.jwksUri}
              />
            )}
          </Field>
        </>
      )}
      <ProductPermissionPicker
        organizationSlug={props.organizationSlug}
        value={props.permissions}
        onChange={props.onPermissionsChange}
        error={errors.permissions}
        testId={`${testId}-permissions`}
      />
    </>
  );
}

type Group = { identifier: string; name: string; permissions: TProductPermissionOption[] };

/** The catalog by API resource, in the order the API lists it (identifier, then name). */
function groupsOf(options: readonly TProductPermissionOption[]): Group[] {
  const groups: Group[] = [];
  for (const option of options) {
    const group = groups.find((g) => g.identifier === option.resource.identifier);
    if (group) {
      group.permissions.push(option);
    } else {
      groups.push({ identifier: option.resource.identifier, name: option.resource.name, permissions: [option] });
    }
  }
  return groups;
}

type PickerProps = {
  organizationSlug: string;
  value: readonly string[];
  onChange: (next: string[]) => void;
  error?: string;
  testId: string;
};

/**
 * The product's permissions as checkboxes, one group per API resource (its name over its
 * identifier, the tokens' audience). A permission the client holds that the catalog no longer has
 * is listed too, so saving does not drop it unseen.
 */
function ProductPermissionPicker({ organizationSlug, value, onChange, error, testId }: PickerProps) {
  const trpc = useTRPC();
  const catalog = useQuery(trpc.applications.productPermissions.queryOptions({ organization_slug: organizationSlug }));
  const toggle = (name: string, on: boolean) => onChange(on ? [...new Set([...value, name])].sort() : value.filter((p) => p !== name));
  const known = new Set(catalog.data?.data.map((p) => p.name));
  const orphans = catalog.data ? value.filter((name) => !known.has(name)) : [];
  return (
    <FieldSet legend="Permissions" error={error} testId={testId}>
      {catalog.isPending && <Skeleton label="Loading the product's permissions…" lines={2} />}
      {catalog.isError && (
        <ErrorPanel error={catalog.error} title="Could not load the product's permissions" onRetry={() => void catalog.refetch()} />
      )}
      {catalog.data && catalog.data.data.length === 0 && orphans.length === 0 && (
        <p className="muted" data-testid={`${testId}-empty`}>
          The product has no API resources with permissions yet: a platform admin declares them. The client can still be created; its tokens
          then carry no permissions.
        </p>
      )}
      <div className="permission-groups">
        {groupsOf(catalog.data?.data ?? []).map((group) => (
          <fieldset key={group.identifier} className="permission-group" aria-label={group.name}>
            <p className="permission-group__head">
              <span>{group.name}</span> <code className="muted">{group.identifier}</code>
            </p>
            {group.permissions.map((permission) => (
              <label key={permission.name} className="check" title={permission.description}>
                <input
                  type="checkbox"
                  checked={value.includes(permission.name)}
                  onChange={(event) => toggle(permission.name, event.target.checked)}
                  data-testid={`${testId}-${permission.name}`}
                />
                <span>
                  <code>{permission.name}</code> <span className="muted">{permission.description}</span>
                </span>
              </label>
            ))}
          </fieldset>
        ))}
        {orphans.length > 0 && (
          <fieldset className="permission-group" aria-label="No longer in the catalog">
            <p className="permission-group__head">No longer in the catalog</p>
            {orphans.map((name) => (
              <label key={name} className="check">
                <input type="checkbox" checked onChange={() => toggle(name, false)} data-testid={`${testId}-${name}`} />
                <span>
                  <code>{name}</code>
                </span>
              </label>
            ))}
          </fieldset>
        )}
      </div>
    </FieldSet>
  );
}
