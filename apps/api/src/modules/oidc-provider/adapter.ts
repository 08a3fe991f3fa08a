import type { Db } from '@svc/db/client';
import {
  consumeOidcPayload,
  destroyOidcPayload,
  findOidcPayload,
  findOidcPayloadByUid,
  findOidcPayloadByUserCode,
  type OidcPayloadRow,
  revokeOidcPayloadsByGrantId,
  upsertOidcPayload,
} from '@svc/db/queries/oidc-provider';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { ClientSource } from './clients.ts';
import { isRegisteredClient, storedRegistration } from './registration.ts';

/** Models whose artifacts belong to a grant: revoking the grant deletes them (as oidc-provider's own adapter does). */
const GRANTABLE = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'ClientCredentials',
]);

function toPayload(row: OidcPayloadRow | undefined): AdapterPayload | undefined {
  if (!row) {
    return undefined;
  }
  const payload = row.payload as AdapterPayload;
  return row.consumedAt ? { ...payload, consumed: Math.floor(row.consumedAt.getTime() / 1000) } : payload;
}

/**
 * oidc-provider's persistence, in PostgreSQL (table oidc_payloads, one row per model and id), so
 * every API process serves every step of a flow. Clients are svc's applications, read through the
 * application cache, and the clients dynamic registration made (registration.ts), stored as
 * `Client` rows.
 */
export function createAdapterFactory(
  db: Db,
  clients: ClientSource,
  storage: (model: string) => Adapter = (model) => new PostgresAdapter(db, model),
): (model: string) => Adapter {
  return (model) => (model === 'Client' ? new ClientAdapter(clients, storage('Client')) : storage(model));
}

export class PostgresAdapter implements Adapter {
  constructor(
    private readonly db: Db,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    await upsertOidcPayload(this.db, {
      model: this.model,
      id,
      payload: payload as Record<string, unknown>,
      grantId: GRANTABLE.has(this.model) ? (payload.grantId ?? null) : null,
      uid: this.model === 'Session' ? (payload.uid ?? null) : null,
      userCode: payload.userCode ?? null,
      expiresAt: typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? new Date(Date.now() + expiresIn * 1000) : null,
    });
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return toPayload(await findOidcPayload(this.db, { model: this.model, id, now: new Date() }));
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return toPayload(await findOidcPayloadByUid(this.db, { model: this.model, uid, now: new Date() }));
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return toPayload(await findOidcPayloadByUserCode(this.db, { model: this.model, userCode, now: new Date() }));
  }

  async consume(id: string): Promise<void> {
    await consumeOidcPayload(this.db, { model: this.model, id, now: new Date() });
  }

  async destroy(id: string): Promise<void> {
    await destroyOidcPayload(this.db, { model: this.model, id });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await revokeOidcPayloadsByGrantId(this.db, grantId);
  }
}

/**
 * Applications, read-only (they are written through svc's API), and registered clients (`dcr_...`,
 * written once by their registration, with the secret's SHA-256 in place of the secret).
 */
class ClientAdapter implements Adapter {
  constructor(
    private readonly clients: ClientSource,
    private readonly registered: Adapter,
  ) {}

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (isRegisteredClient(id)) {
      return (await this.registered.find(id)) ?? undefined;
    }
    return this.clients.find(id);
  }

  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    if (!isRegisteredClient(id)) {
      throw new Error('clients are svc applications: they are not written through the OpenID Provider');
    }
    // No expiry: an unused one is deleted by maintenance:prune_registered_clients (registration.ts).
    await this.registered.upsert(id, storedRegistration(payload) as AdapterPayload);
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }

  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  async consume(): Promise<void> {}

  async destroy(): Promise<void> {}

  async revokeByGrantId(): Promise<void> {}
}
