/**
 * Application key formats. Publishable keys are public identifiers; secret keys carry
 * 40 base62 characters (~238 bits), are shown once and stored only as SHA-256.
 */
export const PUBLISHABLE_KEY_PREFIX = 'pk_live_';
export const SECRET_KEY_PREFIX = 'sk_live_';
export const PUBLISHABLE_KEY_RANDOM_LENGTH = 24;
export const SECRET_KEY_RANDOM_LENGTH = 40;
/** How much of a secret key is kept and shown to identify it: `sk_live_` + 4 characters. */
export const SECRET_KEY_DISPLAY_LENGTH = SECRET_KEY_PREFIX.length + 4;

export const PUBLISHABLE_KEY_PATTERN = new RegExp(`^${PUBLISHABLE_KEY_PREFIX}[0-9A-Za-z]{${PUBLISHABLE_KEY_RANDOM_LENGTH}}$`);
export const SECRET_KEY_PATTERN = new RegExp(`^${SECRET_KEY_PREFIX}[0-9A-Za-z]{${SECRET_KEY_RANDOM_LENGTH}}$`);
