/** The part of autocannon's programmatic API that run.ts uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    type Request = {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request | undefined;
    };
    type Options = {
      url: string;
      connections?: number;
      duration?: number;
      /** Total requests to send, instead of a duration. */
      amount?: number;
      timeout?: number;
      headers?: Record<string, string>;
      requests?: Request[];
    };
    type Histogram = {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
    };
    type Result = {
      duration: number;
      requests: Histogram;
      latency: Histogram;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
    };
    type Instance = EventEmitter;
  }

  function autocannon(opts: autocannon.Options, cb: (error: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export default autocannon;
}
