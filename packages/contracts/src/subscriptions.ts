import { z } from 'zod';
import { ZFeatureKey } from './authorization.ts';
import { ZListQuery, ZName, ZPage, ZSlug } from './lists.ts';
import { ZUsageEventType } from './usage.ts';

/**
 * Subscription plans and the manual subscription model (docs/api.md "Subscriptions").
 * Platform admins manage plans and set each organization's plan, seats and status; svc never
 * charges anyone. A blocked organization's mutating project, user, webhook and usage routes
 * answer 402 (apps/api/src/trpc/subscription-gate.ts); reads keep working.
 */

/** `pln_` + 20 characters (base62; the seeded `free` plan's are hex). Anything else is a 400. */
export const ZSubscriptionPlanId = z.string().regex(/^pln_[0-9A-Za-z]{20}$/, 'expected a plan id (pln_...)');

/** A plan's stable key (`free`, `team`): what PATCH /v1/subscription names as `planKey`. */
export const ZPlanKey = z
  .string()
  .trim()
  .regex(/^[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?$/, 'a plan key is 1-48 lower-case letters, digits, "_" or "-" (e.g. team)');

/** At most this many seats, on a plan or bought by an organization. */
export const MAX_SEATS = 1_000_000;
/** At most this many limited event types per plan. */
export const MAX_USAGE_LIMITS = 100;

/** A seat count: a whole number of members, at least 1 (an organization always has its admin). */
export const ZSeatCount = z.number().int('seats are a whole number').min(1, 'at least 1 seat').max(MAX_SEATS, `at most ${MAX_SEATS} seats`);

/** A usage event type a plan may limit: exactly the names usage events carry (contracts/usage.ts). */
export const ZUsageLimitEventType = ZUsageEventType;

/**
 * Per event type, the quantity allowed per calendar month (UTC); a type not listed is unlimited.
 * Keys are checked one by one so that a bad one is named in the error (path `usageLimits.<key>`).
 */
export const ZUsageLimits = z
  .record(z.string(), z.number().int('a usage limit is a whole number').min(0, 'a usage limit is 0 or more').max(Number.MAX_SAFE_INTEGER))
  .superRefine((limits, ctx) => {
    const keys = Object.keys(limits);
    if (keys.length > MAX_USAGE_LIMITS) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_USAGE_LIMITS} limited event types` });
    }
    for (const key of keys) {
      const checked = ZUsageLimitEventType.safeParse(key);
      if (!checked.success) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${key.slice(0, 80)}: ${checked.error.issues[0]?.message ?? 'not a valid event type'}`,
        });
      }
    }
  })
  .describe(
    'event type (lower-case words joined by . _ : or -, at most 64 characters) -> quantity allowed per calendar month (UTC); a type not listed is unlimited, 0 allows none',
  );

/** At most this many features per plan. */
export const MAX_FEATURES = 100;

/**
 * What a plan includes beside its limits (`sso`, `audit_export`): feature keys, sorted, each once.
 * The check API answers them (`{ feature }`) and the `entitlements` token scope carries them
 * (docs/authorization.md). A key that is also a usage event type the plan limits is usable only
 * while that type has quantity left this month.
 */
export const ZFeatureList = z
  .array(ZFeatureKey)
  .max(MAX_FEATURES, `at most ${MAX_FEATURES} features`)
  .transform((list) => [...new Set(list)].sort())
  .describe(
    'feature keys the plan includes (lower-case letters, digits and _, starting with a letter, at most 64 characters); stored sorted, each once',
  );

/** The usage alerts every plan gets unless it says otherwise: at 50, 80 and 100% of each limit. */
export const DEFAULT_USAGE_THRESHOLDS = [50, 80, 100] as const;
/** At most this many alert thresholds per plan. */
export const MAX_USAGE_THRESHOLDS = 10;

/**
 * The percentages of each usage limit at which an organization gets a `usage.threshold_reached`
 * event (once per threshold, event type and calendar month): whole numbers from 1 to 100 in
 * ascending order, each once. An empty list turns the alerts off.
 */
export const ZUsageThresholds = z
  .array(
    z
      .number()
      .int('a usage threshold is a whole percentage')
      .min(1, 'a usage threshold is 1 to 100 (%)')
      .max(100, 'a usage threshold is 1 to 100 (%)'),
  )
  .max(MAX_USAGE_THRESHOLDS, `at most ${MAX_USAGE_THRESHOLDS} usage thresholds`)
  .superRefine((thresholds, ctx) => {
    for (let i = 1; i < thresholds.length; i++) {
      if ((thresholds[i] as number) <= (thresholds[i - 1] as number)) {
        ctx.addIssue({ code: 'custom', path: [i], message: 'list usage thresholds in ascending order, each once (e.g. [50, 80, 100])' });
        return;
      }
    }
  })
  .describe(
    'percentages of each usage limit at which a usage.threshold_reached event is recorded, once per event type and calendar month: whole numbers 1-100, ascending, each once; [] turns the alerts off',
  );

export const ZSubscriptionPlan = z
  .object({
    id: z.string(),
    key: z.string(),
    name: z.string(),
    /** Members an organization on this plan may have, unless it bought its own seat count; null is unlimited. */
    seatLimit: z.number().int().nullable(),
    usageLimits: z.record(z.string(), z.number().int()),
    /** Percentages of each usage limit that record a usage.threshold_reached event (ascending; empty: none). */
    usageThresholds: z.array(z.number().int()),
    /** Feature keys the plan includes, sorted (docs/authorization.md "Features"). */
    features: z.array(z.string()),
    /** New organizations get this plan (exactly one plan is the default). */
    isDefault: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'SubscriptionPlan' });
export type TSubscriptionPlan = z.infer<typeof ZSubscriptionPlan>;

/** GET /v1/subscription-plans: newest first. */
export const ZListSubscriptionPlansRequest = ZListQuery;
export type TListSubscriptionPlansRequest = z.infer<typeof ZListSubscriptionPlansRequest>;
export const ZSubscriptionPlanPage = ZPage(ZSubscriptionPlan).meta({ id: 'SubscriptionPlanPage' });
export type TSubscriptionPlanPage = z.infer<typeof ZSubscriptionPlanPage>;

/** POST /v1/subscription-plans (platform admins). */
export const ZCreateSubscriptionPlanRequest = z.object({
  key: ZPlanKey,
  name: ZName,
  seatLimit: ZSeatCount.nullable().describe('members allowed; null is unlimited'),
  usageLimits: ZUsageLimits.default({}),
  usageThresholds: ZUsageThresholds.default([...DEFAULT_USAGE_THRESHOLDS]),
  features: ZFeatureList.default([]),
  isDefault: z.boolean().optional().describe('make this the plan new organizations get (the previous default stops being one)'),
});
export type TCreateSubscriptionPlanRequest = z.infer<typeof ZCreateSubscriptionPlanRequest>;

/** PATCH /v1/subscription-plans/{id} (platform admins): only the fields sent change. */
export const ZUpdateSubscriptionPlanRequest = z
  .object({
    id: ZSubscriptionPlanId,
    key: ZPlanKey.optional(),
    name: ZName.optional(),
    seatLimit: ZSeatCount.nullable().optional(),
    usageLimits: ZUsageLimits.optional().describe('replaces the whole map'),
    usageThresholds: ZUsageThresholds.optional().describe('replaces the whole list'),
    features: ZFeatureList.optional().describe('replaces the whole list'),
    isDefault: z
      .boolean()
      .optional()
      .describe('true makes this the default plan; false is refused for the default plan (make another plan the default instead)'),
  })
  .refine((v) => Object.keys(v).some((k) => k !== 'id' && v[k as keyof typeof v] !== undefined), {
    message: 'send key, name, seatLimit, usageLimits, usageThresholds, features or isDefault',
  });
export type TUpdateSubscriptionPlanRequest = z.infer<typeof ZUpdateSubscriptionPlanRequest>;

export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'inactive', 'cancelled', 'expired'] as const;
export const ZSubscriptionStatus = z.enum(SUBSCRIPTION_STATUSES);
export type TSubscriptionStatus = z.infer<typeof ZSubscriptionStatus>;

/** The statuses in which every mutating project, user, webhook and usage route answers 402 subscription_inactive. */
export const BLOCKING_STATUSES: ReadonlySet<TSubscriptionStatus> = new Set(['inactive', 'cancelled', 'expired']);

/** The 402 codes of the subscription rule. */
export const ZSubscriptionBlockCode = z.enum(['subscription_inactive', 'subscription_limit_exceeded']);
export type TSubscriptionBlockCode = z.infer<typeof ZSubscriptionBlockCode>;

/** The `limit` of the seat limit (a usage limit's `limit` is its event type; `kind` tells them apart). */
export const SEATS_LIMIT = 'seats';

/**
 * One limit of an organization's plan and where it stands now. GET /v1/subscription lists one
 * per limit in force (`limits`), and a 402 subscription_limit_exceeded carries the one it hit,
 * with the same fields and values, so a program can see the wall before it hits it.
 */
export const ZSubscriptionLimit = z
  .object({
    kind: z.enum(['seats', 'usage']).describe('seats: members of the organization; usage: a usage event type per calendar month (UTC)'),
    limit: z.string().describe("what is limited: 'seats', or the usage event type (e.g. api_call)"),
    max: z.number().int().describe('the quantity allowed: members, or the quantity of the event type per calendar month'),
    used: z
      .number()
      .int()
      .describe("members now (invited ones hold a seat), or the event type's quantity recorded in the month (period) counted"),
    periodEnd: z
      .string()
      .nullable()
      .describe('ISO 8601 instant the count starts again (the first day of the next calendar month, 00:00 UTC); null for seats'),
    plan: z.string().describe("the key of the organization's plan (GET /v1/subscription-plans)"),
  })
  .meta({ id: 'SubscriptionLimit' });
export type TSubscriptionLimit = z.infer<typeof ZSubscriptionLimit>;

const upgradeUrl = z
  .string()
  .nullable()
  .describe('where the organization can change its plan (SUBSCRIPTION_UPGRADE_URL, {organizationId} filled in); null when not configured');

/**
 * Why mutating routes of an organization answer 402, with the facts a program acts on: the
 * `error` object of a 402 (plus its requestId) and GET /v1/subscription's `blocked`.
 * subscription_limit_exceeded names the limit (the fields of ZSubscriptionLimit) and `requested`,
 * what the refused request would have added to `used` (1 for a new member, the request's quantity
 * of the event type, 0 for a route refused only because the organization is already over);
 * subscription_inactive names the status.
 */
const limitExceeded = z
  .object({ code: z.literal('subscription_limit_exceeded'), message: z.string() })
  .extend(ZSubscriptionLimit.shape)
  .extend({ requested: z.number().int().describe('what the refused request would have added to used'), upgradeUrl });
const inactive = z.object({
  code: z.literal('subscription_inactive'),
  message: z.string(),
  status: z.enum(['inactive', 'cancelled', 'expired']).describe("the subscription's status"),
  plan: z.string().describe("the key of the organization's plan"),
  upgradeUrl,
});
export const ZSubscriptionBlock = z.discriminatedUnion('code', [limitExceeded, inactive]).meta({ id: 'SubscriptionBlock' });
export type TSubscriptionBlock = z.infer<typeof ZSubscriptionBlock>;

/** The body of every 402 (/v1; /trpc carries the same object as `error` in its error shape). */
export const ZSubscriptionRefusal = z
  .object({
    error: z.discriminatedUnion('code', [limitExceeded.extend({ requestId: z.string() }), inactive.extend({ requestId: z.string() })]),
  })
  .meta({ id: 'SubscriptionRefusal' });
export type TSubscriptionRefusal = z.infer<typeof ZSubscriptionRefusal>;

export const ZUsageAgainstLimit = z.object({
  eventType: z.string(),
  /** Quantity allowed this calendar month. */
  limit: z.number().int(),
  /** Quantity recorded this calendar month. */
  used: z.number().int(),
  /** limit - used, never below 0. */
  remaining: z.number().int(),
  /** used > limit: mutating routes answer 402 subscription_limit_exceeded. */
  overLimit: z.boolean(),
});
export type TUsageAgainstLimit = z.infer<typeof ZUsageAgainstLimit>;

export const ZSubscription = z
  .object({
    organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    plan: ZSubscriptionPlan,
    status: ZSubscriptionStatus,
    seats: z.object({
      /** Seats bought for this organization; null means the plan's seat limit applies. */
      bought: z.number().int().nullable(),
      /** The seat limit in force (bought, else the plan's); null is unlimited. */
      limit: z.number().int().nullable(),
      /** Members of the organization now. */
      used: z.number().int(),
      /** Free seats (never below 0); null is unlimited. */
      available: z.number().int().nullable(),
      /** used > limit. */
      overLimit: z.boolean(),
    }),
    usage: z.object({
      /** The current calendar month (UTC): [periodStart, periodEnd). */
      periodStart: z.string(),
      periodEnd: z.string(),
      /** One entry per event type the plan limits. */
      limits: z.array(ZUsageAgainstLimit),
    }),
    /** Over the seat limit or over a usage limit. */
    overLimit: z.boolean(),
    /** Every limit in force (seats when limited, then each limited event type), as a 402 names them. */
    limits: z.array(ZSubscriptionLimit),
    /** What mutating project, user, webhook and usage routes answer now (the 402's error, without requestId); null while they work. */
    blocked: ZSubscriptionBlock.nullable(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Subscription' });
export type TSubscription = z.infer<typeof ZSubscription>;

const organizationSlug = ZSlug.optional().describe(
  "the organization; default: the session's active workspace or the API key's organization",
);

/** GET /v1/subscription?organization_slug= */
export const ZGetSubscriptionRequest = z.object({ organization_slug: organizationSlug });
export type TGetSubscriptionRequest = z.infer<typeof ZGetSubscriptionRequest>;

/** PATCH /v1/subscription?organization_slug= (platform admins): only the fields sent change. */
export const ZUpdateSubscriptionRequest = z
  .object({
    organization_slug: organizationSlug,
    planKey: ZPlanKey.optional(),
    seats: ZSeatCount.nullable().optional().describe("seats bought; null goes back to the plan's seat limit"),
    status: ZSubscriptionStatus.optional(),
  })
  .refine((v) => v.planKey !== undefined || v.seats !== undefined || v.status !== undefined, {
    message: 'send planKey, seats or status',
  });
export type TUpdateSubscriptionRequest = z.infer<typeof ZUpdateSubscriptionRequest>;

// Console forms: the same checks as the API bodies, from the shapes a form holds (an empty seat
// field for "unlimited", usage limits one `event_type = quantity` per line).

const seatsField = z
  .string()
  .trim()
  .transform((v, ctx) => {
    if (v === '') {
      return null;
    }
    if (!/^\d+$/.test(v)) {
      ctx.addIssue({ code: 'custom', message: 'a whole number of seats, or empty' });
      return z.NEVER;
    }
    return Number(v);
  })
  .pipe(ZSeatCount.nullable());

/** `api_call = 1000` lines -> `{ api_call: 1000 }`, each line checked like the API body. */
const usageLimitLines = z
  .string()
  .max(MAX_USAGE_LIMITS * 140)
  .transform((text, ctx) => {
    const out: Record<string, number> = {};
    const problems: string[] = [];
    const lines = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '');
    lines.forEach((line, index) => {
      const match = /^([^=\s]+)\s*=\s*(\d+)$/.exec(line);
      if (!match) {
        problems.push(`line ${index + 1}: write event_type = quantity`);
        return;
      }
      const [, eventType = '', quantity = ''] = match;
      if (!ZUsageLimitEventType.safeParse(eventType).success) {
        problems.push(`line ${index + 1}: ${eventType} is not a valid event type`);
      } else if (eventType in out) {
        problems.push(`line ${index + 1}: ${eventType} is listed twice`);
      } else if (!Number.isSafeInteger(Number(quantity))) {
        problems.push(`line ${index + 1}: the quantity is too large`);
      } else {
        out[eventType] = Number(quantity);
      }
    });
    if (Object.keys(out).length > MAX_USAGE_LIMITS) {
      problems.unshift(`at most ${MAX_USAGE_LIMITS} limited event types`);
    }
    if (problems.length > 0) {
      ctx.addIssue({ code: 'custom', message: problems.join('; ') });
      return z.NEVER;
    }
    return out;
  });

/** `50, 80, 100` -> `[50, 80, 100]` (commas or spaces; empty: no alerts), checked like the API body; one message for the field. */
const usageThresholdsField = z
  .string()
  .max(200)
  .transform((text, ctx) => {
    const parts = text.split(/[\s,%]+/).filter((p) => p !== '');
    if (parts.some((p) => !/^\d+$/.test(p))) {
      ctx.addIssue({ code: 'custom', message: 'whole percentages separated by commas, e.g. 50, 80, 100' });
      return z.NEVER;
    }
    const checked = ZUsageThresholds.safeParse(parts.map(Number));
    if (!checked.success) {
      ctx.addIssue({ code: 'custom', message: checked.error.issues[0]?.message ?? 'not valid usage thresholds' });
      return z.NEVER;
    }
    return checked.data;
  });

/** `sso, audit_export` -> `['audit_export', 'sso']` (commas, spaces or lines; empty: none), each key checked like the API body. */
const featuresField = z
  .string()
  .max(MAX_FEATURES * 66)
  .transform((text, ctx) => {
    const keys = text.split(/[\s,]+/).filter((k) => k !== '');
    const bad = keys.filter((k) => !ZFeatureKey.safeParse(k).success);
    if (bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `${bad.slice(0, 3).join(', ')}: a feature key is lower-case letters, digits and underscores, starting with a letter`,
      });
      return z.NEVER;
    }
    const checked = ZFeatureList.safeParse(keys);
    if (!checked.success) {
      ctx.addIssue({ code: 'custom', message: checked.error.issues[0]?.message ?? 'not a valid feature list' });
      return z.NEVER;
    }
    return checked.data;
  });

/** The console's plan form (create and edit); its output is the POST body (PATCH sends the same fields). */
export const ZSubscriptionPlanForm = z.object({
  key: ZPlanKey,
  name: ZName,
  seatLimit: seatsField,
  usageLimits: usageLimitLines,
  usageThresholds: usageThresholdsField,
  features: featuresField,
  isDefault: z.boolean(),
});
export type TSubscriptionPlanFormInput = z.input<typeof ZSubscriptionPlanForm>;

/** The console's subscription form (platform admins): plan, seats (empty: the plan's) and status. */
export const ZSubscriptionForm = z.object({
  planKey: ZPlanKey,
  seats: seatsField,
  status: ZSubscriptionStatus,
});
export type TSubscriptionFormInput = z.input<typeof ZSubscriptionForm>;

/** `{ api_call: 1000 }` -> `api_call = 1000` lines (the form's text). */
export function usageLimitsToLines(limits: Record<string, number>): string {
  return Object.entries(limits)
    .map(([type, quantity]) => `${type} = ${quantity}`)
    .join('\n');
}
