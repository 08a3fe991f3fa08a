/** Where the worker and its tasks write what they do (the worker's pino logger, or a test's). */
export type JobLogger = {
  debug: (obj: object, msg: string) => void;
  info: (obj: object, msg: string) => void;
  error: (obj: object, msg: string) => void;
};
