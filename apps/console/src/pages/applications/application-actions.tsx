import type { TApplication, TApplicationWithSecret } from '@svc/contracts/applications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { RowActions } from '../../components/row-actions.tsx';
import { useTRPC } from '../../trpc.ts';

type Props = {
  application: TApplication;
  organizationSlug: string;
  /** Opens the application's page (/applications/<id>); left out on that page itself. */
  onManage?: (application: TApplication) => void;
  /** Opens the settings dialog. */
  onEdit: (application: TApplication) => void;
  /** Called with the new secret key (the page shows it once). */
  onRotated: (rotated: TApplicationWithSecret) => Promise<void>;
  testId: string;
};

/**
 * An application's "⋯" menu, in its row and on its detail: Manage, Edit settings…, Rotate secret
 * key…, then Disable… (confirmed) or Enable. svc has no way to delete an application: disabling
 * is how its keys stop working.
 */
export function ApplicationActions({ application, organizationSlug, onManage, onEdit, onRotated, testId }: Props) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.applications.pathKey() });
  const setStatus = useMutation(trpc.applications.setStatus.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.applications.rotateSecret.mutationOptions({ onSuccess: refresh }));
  const ref = { id: application.id, organization_slug: organizationSlug };
  const name = application.name;
  return (
    <RowActions
      name={name}
      testId={testId}
      actions={[
        ...(onManage ? [{ label: 'Manage', testId: 'application-manage', onSelect: () => onManage(application) }] : []),
        { label: 'Edit settings…', testId: 'application-edit', onSelect: () => onEdit(application) },
        {
          label: 'Rotate secret key…',
          testId: 'application-rotate',
          confirm: {
            title: `Rotate the secret key of ${name}?`,
            consequence: 'A new secret key is shown once; the current one stops working at once, so update every backend that uses it.',
            confirmLabel: 'Rotate secret key',
            tone: 'primary',
            testId: 'application-rotate-dialog',
            onConfirm: async () => onRotated(await rotate.mutateAsync(ref)),
          },
        },
        application.status === 'active'
          ? {
              label: 'Disable…',
              testId: 'application-disable',
              destructive: true,
              confirm: {
                title: `Disable ${name}?`,
                consequence:
                  'Its publishable and secret keys are refused (409 application_disabled) on every API process until you enable it again.',
                confirmLabel: 'Disable application',
                typeToConfirm: name,
                testId: 'application-disable-dialog',
                onConfirm: () => setStatus.mutateAsync({ ...ref, status: 'disabled' }),
              },
            }
          : {
              label: 'Enable…',
              testId: 'application-enable',
              confirm: {
                title: `Enable ${name}?`,
                consequence: 'Its keys work again at once.',
                confirmLabel: 'Enable application',
                tone: 'primary',
                testId: 'application-enable-dialog',
                onConfirm: () => setStatus.mutateAsync({ ...ref, status: 'active' }),
              },
            },
      ]}
    />
  );
}
