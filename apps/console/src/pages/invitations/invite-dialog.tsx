import { zodResolver } from '@hookform/resolvers/zod';
import { type TCreateInvitationResponse, ZCreateInvitationRequest } from '@svc/contracts/invitations';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Controller, useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { errorStringField, parseError } from '../../lib/errors.ts';
import { useTRPC } from '../../trpc.ts';

/** The email field's id: the dialog focuses it when it opens. */
export const EMAIL_FIELD_ID = 'invitations-create-email';

type InviteDialogProps = {
  slug: string;
  /** The organization's roles, by name (`useRoleOptions`). */
  roles: SelectOption<string>[];
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Called with the invitation and its link, after the dialog has closed (the page shows the link once). */
  onCreated: (created: TCreateInvitationResponse) => void | Promise<void>;
  /** Called with the new link of the pending invitation resent from the duplicate error, after the dialog has closed. */
  onResent: (resent: TCreateInvitationResponse) => void | Promise<void>;
};

/**
 * "Invite" (the page header's primary button) and its form: email, role by name, and whether only
 * that email may accept. Validated with the contracts request schema before anything is sent.
 */
export function InviteDialog({ slug, roles, open, onOpenChange, onCreated, onResent }: InviteDialogProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const empty = { organization_slug: slug, email: '', roleKey: 'org_member', requireEmailMatch: true as boolean };
  const form = useForm({ resolver: zodResolver(ZCreateInvitationRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(trpc.invitations.create.mutationOptions());
  const resend = useMutation(trpc.invitations.resend.mutationOptions());
  const revoke = useMutation(trpc.invitations.revoke.mutationOptions());
  /** The email whose pending invitation was revoked from here: the form can be sent again. */
  const [revokedFor, setRevokedFor] = useState<string | null>(null);

  const { close, settle } = dialogMutation({
    onOpenChange,
    forget: () => {
      form.reset(empty);
      resend.reset();
      revoke.reset();
      setRevokedFor(null);
    },
    mutation: create,
  });
  // A duplicate names the pending invitation: resend it or revoke it right here, instead of
  // hunting for its row.
  const pendingId =
    parseError(create.error).code === 'invitation_already_pending' ? errorStringField(create.error, 'invitationId') : undefined;
  const resendPending = async (id: string) => {
    const resent = await resend.mutateAsync({ id, organization_slug: slug }).catch(() => undefined);
    if (resent) {
      close(false);
      await onResent(resent);
    }
  };
  const revokePending = async (id: string) => {
    const revoked = await revoke.mutateAsync({ id, organization_slug: slug }).catch(() => undefined);
    if (revoked) {
      setRevokedFor(revoked.email);
      create.reset();
      await queryClient.invalidateQueries({ queryKey: trpc.invitations.list.pathKey() });
    }
  };
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ ...values, organization_slug: slug }));
    if (created) {
      await onCreated(created);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="invitations-create-open">
          Invite
        </button>
      }
      title="Invite someone"
      description="svc shows the invite link once: copy it and send it to the person. They sign in (or sign up) with the invited email and accept."
      onSubmit={submit}
      submitLabel="Create invitation"
      pending={create.isPending}
      pendingLabel="Inviting…"
      error={resend.error ?? revoke.error ?? create.error}
      errorTitle="Could not create the invitation"
      errorActions={
        pendingId && (
          <div className="form-row" data-testid="invitations-create-duplicate">
            <button
              type="button"
              className="button button--primary"
              disabled={resend.isPending || revoke.isPending}
              onClick={() => void resendPending(pendingId)}
              data-testid="invitations-create-duplicate-resend"
            >
              {resend.isPending ? 'Sending…' : 'Resend: a new link for the pending invitation'}
            </button>
            <button
              type="button"
              className="button button--danger"
              disabled={resend.isPending || revoke.isPending}
              onClick={() => void revokePending(pendingId)}
              data-testid="invitations-create-duplicate-revoke"
            >
              {revoke.isPending ? 'Revoking…' : 'Revoke the pending invitation'}
            </button>
          </div>
        )
      }
      testId="invitations-create"
    >
      {revokedFor && (
        <p className="muted" role="status" data-testid="invitations-create-revoked">
          The pending invitation for {revokedFor} is revoked: create the new one now.
        </p>
      )}
      <div className="form-grid">
        <Field label="Email" id={EMAIL_FIELD_ID} error={errors.email?.message} testId="invitations-create-email">
          {(control) => (
            <input {...control} type="email" autoComplete="off" data-testid="invitations-create-email" {...form.register('email')} />
          )}
        </Field>
        <Field label="Role" error={errors.roleKey?.message} testId="invitations-create-role">
          {(control) => (
            <Controller
              control={form.control}
              name="roleKey"
              render={({ field }) => (
                <Select {...control} value={field.value} options={roles} onValueChange={field.onChange} testId="invitations-create-role" />
              )}
            />
          )}
        </Field>
      </div>
      <label className="check">
        <input type="checkbox" data-testid="invitations-create-require-email" {...form.register('requireEmailMatch')} />
        <span>
          Only this email may accept <span className="muted">(otherwise anyone signed in with the link may)</span>
        </span>
      </label>
    </FormDialog>
  );
}
