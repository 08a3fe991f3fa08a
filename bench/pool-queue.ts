/**
 * pool-steady: svc's database pool (packages/db createDatabase, postgres.js with svc's patch)
 * under a steady load that keeps some of its connections idle the whole time, which is how most
 * processes run most of the day. Three query loops share the pool's ten connections, each running
 * `select 1` as a prepared statement back to back, for BENCH_POOL_BATCHES (6) batches of
 * BENCH_POOL_QUERIES (60,000; smoke 6,000) queries. The figure is the last batch's time per query
 * against the first batch's, side by side in one run: a pool whose bookkeeping grows with every
 * query it ever ran (postgres.js kept each shifted slot of its idle-connection queue, and searched
 * all of them on every query, until svc's patch) shows up as a ratio well above 1.
 *
 * It runs in the bench process against one fresh `bench_*_pool` database: no server is involved.
 */
import { createDatabase } from '../packages/db/src/client.ts';
import { type BenchContext, fmt, positiveSetting, type Verdict } from './support.ts';

export const POOL_SCENARIOS = ['pool-steady'] as const;
/** The last batch may cost at most this much more per query than the first. */
export const POOL_TARGETS = { poolSteadyMaxRatio: 1.25 };

const LOOPS = 3;
const POOL_SIZE = 10;

export async function runPoolBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('pool-steady')) {
    return { verdicts: [], results: {} };
  }
  const perBatch = Math.round(positiveSetting('BENCH_POOL_QUERIES', ctx.smoke ? 6_000 : 60_000) / LOOPS) * LOOPS;
  const batches = Math.max(2, Math.round(positiveSetting('BENCH_POOL_BATCHES', 6)));
  const { url } = await ctx.createDb('pool');
  ctx.log(
    `measuring: pool-steady (${LOOPS} query loops on a pool of ${POOL_SIZE}, ${batches} batches of ${perBatch.toLocaleString('en-US')} queries)`,
  );
  const database = createDatabase({ url, max: POOL_SIZE, applicationName: 'bench-pool' });
  try {
    // Every connection open first, as in a server that has seen a burst.
    await Promise.all(Array.from({ length: POOL_SIZE }, () => database.sql`select pg_sleep(0.05)`));
    const loop = async (queries: number) => {
      for (let i = 0; i < queries; i++) {
        await database.sql`select 1`;
      }
    };
    const microseconds: number[] = [];
    for (let batch = 0; batch < batches; batch++) {
      const started = performance.now();
      await Promise.all(Array.from({ length: LOOPS }, () => loop(perBatch / LOOPS)));
      microseconds.push(((performance.now() - started) * 1000) / perBatch);
      ctx.log(`  pool-steady          batch ${batch + 1}: ${fmt(microseconds.at(-1) as number, 1)} us/query`);
    }
    const first = microseconds[0] as number;
    const last = microseconds.at(-1) as number;
    const ratio = last / first;
    ctx.log(`  pool-steady          last / first batch = ${fmt(ratio, 2)} (target <= ${POOL_TARGETS.poolSteadyMaxRatio})`);
    ctx.log('');
    return {
      verdicts: [
        {
          name: 'pool-steady: time per query, last batch vs first',
          pass: ratio <= POOL_TARGETS.poolSteadyMaxRatio,
          detail: `${fmt(last, 1)} vs ${fmt(first, 1)} us/query = ${fmt(ratio, 2)}x (<= ${POOL_TARGETS.poolSteadyMaxRatio}x)`,
        },
      ],
      results: { poolSteady: { loops: LOOPS, poolSize: POOL_SIZE, queriesPerBatch: perBatch, microsecondsPerQuery: microseconds, ratio } },
    };
  } finally {
    await database.close();
  }
}
