import { z } from 'zod';

/** Payload schemas of every task, parsed at the top of the task (jobs may outlive a deploy). */
export const ZTaskPayloads = {
  'maintenance:prune_rate_limits': z.object({
    /** Keep windows newer than this many seconds. */
    keepSeconds: z.number().int().positive().default(120),
  }),
  /** Sign-ins started and never finished (abandoned, bots, stuffing) would otherwise pile up. */
  'maintenance:prune_pending_logins': z.object({}),
} as const;

export type TaskName = keyof typeof ZTaskPayloads;
export type TaskPayloads = { [N in TaskName]: z.input<(typeof ZTaskPayloads)[N]> };
