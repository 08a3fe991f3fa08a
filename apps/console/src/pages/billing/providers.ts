import { BILLING_PROVIDERS, type TBillingAdapterStatus, type TBillingProvider } from '@svc/contracts/billing';
import type { SelectOption } from '../../components/select.tsx';

/** The providers' names as their users know them. */
export const PROVIDER_LABEL: Record<TBillingProvider, string> = { stripe: 'Stripe', razorpay: 'Razorpay', paddle: 'Paddle' };

/** The server settings that configure each provider (named, never read: the console never sees a key). */
export const PROVIDER_SETTING: Record<TBillingProvider, string> = {
  stripe: 'STRIPE_SECRET_KEY',
  razorpay: 'RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET',
  paddle: 'PADDLE_API_KEY',
};

/** What a mapping points at, per provider. */
export const ITEM_HINT: Record<TBillingProvider, string> = {
  stripe: 'meter event name',
  razorpay: 'item id (item_…)',
  paddle: 'price id (pri_…)',
};

/** What a connection records usage against, per provider. */
export const ACCOUNT_HINT: Record<TBillingProvider, string> = {
  stripe: 'customer id (cus_…)',
  razorpay: 'subscription id (sub_…)',
  paddle: 'subscription id (sub_…)',
};

/** The options of a provider Select (the connect and the mapping dialogs). */
export const PROVIDER_OPTIONS: SelectOption<TBillingProvider>[] = BILLING_PROVIDERS.map((provider) => ({
  value: provider,
  label: PROVIDER_LABEL[provider],
}));

/**
 * A provider field's hint: said only when this svc has no key for it, since usage mapped to it
 * is then skipped (with that reason) rather than synced.
 */
export function unconfiguredHint(provider: TBillingProvider, adapters: TBillingAdapterStatus[]): string | undefined {
  const adapter = adapters.find((a) => a.provider === provider);
  return adapter && !adapter.configured
    ? `Not configured on this svc (set ${PROVIDER_SETTING[provider]}): its usage is skipped until it is.`
    : undefined;
}
