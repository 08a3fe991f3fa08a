import { zodResolver } from '@hookform/resolvers/zod';
import { type TCreateExportResponse, type TExportFormat, ZCreateExportRequest } from '@svc/contracts/exports';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { Select, type SelectOption } from '../../components/select.tsx';
import { useTRPC } from '../../trpc.ts';

const ZExportForm = ZCreateExportRequest.pick({ format: true });

const FORMAT_OPTIONS: SelectOption<TExportFormat>[] = [
  { value: 'json', label: 'JSON (one document)' },
  { value: 'csv', label: 'CSV (one row per record, spreadsheet-safe)' },
];

const DEFAULTS = { format: 'json' as TExportFormat };

type CreateExportDialogProps = {
  organizationSlug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Called once the api has queued the export, after the dialog has closed. */
  onCreated: (created: TCreateExportResponse) => void | Promise<void>;
};

/**
 * "Create export" (the page header's primary button): the format, validated with the contracts
 * request schema; the worker builds the snapshot after the dialog closes.
 */
export function CreateExportDialog({ organizationSlug, open, onOpenChange, onCreated }: CreateExportDialogProps) {
  const trpc = useTRPC();
  const form = useForm({ resolver: zodResolver(ZExportForm), defaultValues: DEFAULTS });
  const create = useMutation(trpc.exports.create.mutationOptions());
  const format = form.watch('format');

  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(DEFAULTS), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ organization_slug: organizationSlug, format: values.format }));
    if (created) {
      await onCreated(created);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="export-create-open">
          Create export
        </button>
      }
      title="Create export"
      description="A snapshot of everything this organization owns, as of the moment the worker builds it. Either format can be downloaded later."
      onSubmit={submit}
      submitLabel="Create export"
      pending={create.isPending}
      pendingLabel="Requesting…"
      error={create.error}
      errorTitle="Could not create the export"
      testId="export-create"
    >
      <Field label="Format" error={form.formState.errors.format?.message} hint="The file's own format; the other is offered beside it.">
        {(control) => (
          <Select
            {...control}
            value={format}
            options={FORMAT_OPTIONS}
            testId="export-format"
            onValueChange={(value) => form.setValue('format', value, { shouldDirty: true })}
          />
        )}
      </Field>
    </FormDialog>
  );
}
