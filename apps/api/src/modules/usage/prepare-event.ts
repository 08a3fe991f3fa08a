import { createHash } from 'node:crypto';
import type { TUsageEventInput } from '@svc/contracts/usage';
import type { PreparedEvent } from './ingester.ts';

/** Object keys are in sorted order at every level (then JSON.stringify is already canonical). */
function keysSorted(value: unknown): boolean {
  if (value === null || typeof value !== 'object') {
    return true;
  }
  if (Array.isArray(value)) {
    return value.every(keysSorted);
  }
  let previous: string | undefined;
  for (const key in value) {
    if (previous !== undefined && previous >= key) {
      return false;
    }
    previous = key;
    if (!keysSorted((value as Record<string, unknown>)[key])) {
      return false;
    }
  }
  return true;
}

/** A copy with object keys sorted at every level. */
function sortKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') {
    return value;
  }
  if (Array.isArray(value)) {
    return value.map(sortKeys);
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    out[key] = sortKeys((value as Record<string, unknown>)[key]);
  }
  return out;
}

/**
 * JSON with object keys sorted at every level: equal payloads hash equal whatever the key order.
 * (Integer-like keys: JavaScript lists them first in ascending numeric order, so such objects
 * count as unsorted and are rebuilt, which gives them the same order every time.)
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(keysSorted(value) ? value : sortKeys(value));
}

const EMPTY_PROPERTIES = Object.freeze({}) as Record<string, unknown>;

/**
 * A validated event as it is stored. The request hash covers what the sender said (event type,
 * quantity with its default, occurredAt as sent or null, properties): a replay must repeat the
 * payload, and an omitted occurredAt stays omitted (its default, the time of receipt, differs on
 * every attempt).
 */
export function prepareEvent(input: TUsageEventInput, receivedAt: number): PreparedEvent {
  const quantity = input.quantity ?? 1;
  const occurredAt = input.occurredAt !== undefined ? Date.parse(input.occurredAt) : undefined;
  const properties = input.properties ?? EMPTY_PROPERTIES;
  const propertiesJson = input.properties === undefined ? '{}' : canonicalJson(properties);
  const requestHash = createHash('sha256')
    .update(
      `${JSON.stringify([input.eventType, quantity, occurredAt === undefined ? null : new Date(occurredAt).toISOString()])}${propertiesJson}`,
    )
    .digest('hex');
  return {
    idempotencyKey: input.idempotencyKey,
    eventType: input.eventType,
    quantity,
    occurredAt: occurredAt ?? receivedAt,
    properties,
    propertiesJson,
    requestHash,
  };
}
