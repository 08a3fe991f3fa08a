import { quietly } from '@svc/dev-engine/quiet-provider';

/**
 * oidc-provider itself, for the files of this module that build on it. Loaded inside quietly():
 * the module warns about the Node 20 runtime when it is first imported.
 */
export const { default: Provider, errors, interactionPolicy } = await quietly(() => import('oidc-provider'));
export type ProviderInstance = InstanceType<typeof Provider>;
