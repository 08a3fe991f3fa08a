import { zodResolver } from '@hookform/resolvers/zod';
import {
  type TApiPermission,
  type TApiResource,
  ZCreateApiPermissionRequest,
  ZCreateApiResourceRequest,
  ZUpdateApiPermissionRequest,
  ZUpdateApiResourceRequest,
} from '@svc/contracts/authorization';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useFieldArray, useForm } from 'react-hook-form';
import { useNavigate } from 'react-router';
import { toast } from 'sonner';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field, FieldSet } from '../../components/field.tsx';
import { useTRPC } from '../../trpc.ts';

/**
 * After any change to the catalog: the resources, the product roles (a deleted permission leaves
 * them) and the organization's roles (custom roles lose it too; their pickers list the catalog).
 */
export function useInvalidateCatalog() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return async () => {
    await Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.authorization.pathKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.roles.pathKey() }),
    ]);
  };
}

const NAME_HINT = 'Lower-case, in segments joined by . or : (invoices.read, read:reports); unique across the product. It never changes.';

const EMPTY_RESOURCE = { identifier: '', name: '', description: '', permissions: [] as { name: string; description: string }[] };

type CreateApiResourceDialogProps = { open: boolean; onOpenChange: (open: boolean) => void };

/**
 * "Register API" (the list's primary button): identifier, name, description and the first
 * permissions, checked with the contracts schema; the resource's page opens on it once stored.
 */
export function CreateApiResourceDialog({ open, onOpenChange }: CreateApiResourceDialogProps) {
  const trpc = useTRPC();
  const navigate = useNavigate();
  const invalidate = useInvalidateCatalog();
  const form = useForm({ resolver: zodResolver(ZCreateApiResourceRequest), defaultValues: EMPTY_RESOURCE });
  const permissions = useFieldArray({ control: form.control, name: 'permissions' });
  const errors = form.formState.errors;
  const create = useMutation(trpc.authorization.resource.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(EMPTY_RESOURCE), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync(values));
    if (created) {
      toast.success(`Registered the API ${created.name}`);
      await invalidate();
      await navigate(`/authorization/resources/${created.id}`);
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="api-resource-create-open">
          Register API
        </button>
      }
      title="Register an API"
      description="One of your product's APIs. Applications ask for its tokens by its identifier (the resource parameter), which is also their audience; they carry the person's permissions on it."
      wide
      onSubmit={submit}
      submitLabel="Register API"
      pending={create.isPending}
      pendingLabel="Registering…"
      error={create.error}
      errorTitle="Could not register the API"
      testId="api-resource-create"
    >
      <div className="form-grid">
        <Field
          label="Identifier"
          error={errors.identifier?.message}
          hint="An https URL; it never changes."
          testId="api-resource-create-identifier"
        >
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              spellCheck={false}
              placeholder="https://api.example.com"
              data-testid="api-resource-create-identifier"
              {...form.register('identifier')}
            />
          )}
        </Field>
        <Field label="Name" error={errors.name?.message} hint="What admins read: “Invoices API”." testId="api-resource-create-name">
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              placeholder="Invoices API"
              data-testid="api-resource-create-name"
              {...form.register('name')}
            />
          )}
        </Field>
      </div>
      <Field label="Description" error={errors.description?.message} hint="Optional." testId="api-resource-create-description">
        {(control) => <textarea {...control} rows={2} data-testid="api-resource-create-description" {...form.register('description')} />}
      </Field>
      <FieldSet
        legend="Permissions"
        error={errors.permissions?.message ?? errors.permissions?.root?.message}
        testId="api-resource-create-permissions"
      >
        <p className="field__hint">{NAME_HINT} You can add more later.</p>
        <div className="permission-rows">
          {permissions.fields.length > 0 && (
            // The inputs are named one by one (aria-label): these headings are for the eye.
            <div className="permission-rows__head" aria-hidden="true">
              <span>Name</span>
              <span>Description</span>
            </div>
          )}
          {permissions.fields.map((row, index) => {
            const rowErrors = errors.permissions?.[index];
            const nameError = `api-resource-create-permission-${index}-name-error`;
            const descriptionError = `api-resource-create-permission-${index}-description-error`;
            return (
              <div key={row.id} className="permission-rows__row" data-testid="api-resource-create-permission-row">
                <div className="field">
                  <input
                    aria-label={`Permission ${index + 1}: name`}
                    aria-invalid={rowErrors?.name ? true : undefined}
                    aria-describedby={rowErrors?.name ? nameError : undefined}
                    autoComplete="off"
                    spellCheck={false}
                    placeholder="invoices.read"
                    className="input--mono"
                    data-testid={`api-resource-create-permission-${index}-name`}
                    {...form.register(`permissions.${index}.name`)}
                  />
                  <p id={nameError} className="field__error" data-testid={rowErrors?.name ? nameError : undefined}>
                    {rowErrors?.name?.message}
                  </p>
                </div>
                <div className="field">
                  <input
                    aria-label={`Permission ${index + 1}: description`}
                    aria-invalid={rowErrors?.description ? true : undefined}
                    aria-describedby={rowErrors?.description ? descriptionError : undefined}
                    autoComplete="off"
                    placeholder="Read invoices"
                    data-testid={`api-resource-create-permission-${index}-description`}
                    {...form.register(`permissions.${index}.description`)}
                  />
                  <p id={descriptionError} className="field__error">
                    {rowErrors?.description?.message}
                  </p>
                </div>
                <button
                  type="button"
                  className="button button--icon"
                  aria-label={`Remove permission ${index + 1}`}
                  title="Remove"
                  onClick={() => permissions.remove(index)}
                  data-testid={`api-resource-create-permission-${index}-remove`}
                >
                  <span aria-hidden="true">×</span>
                </button>
              </div>
            );
          })}
        </div>
        <button
          type="button"
          className="button"
          onClick={() => permissions.append({ name: '', description: '' })}
          data-testid="api-resource-create-permission-add"
        >
          Add permission
        </button>
      </FieldSet>
    </FormDialog>
  );
}

type EditApiResourceDialogProps = { resource: TApiResource; open: boolean; onOpenChange: (open: boolean) => void };

/** "Edit details" on a resource's page: its name and description; the identifier stays (tokens carry it). */
export function EditApiResourceDialog({ resource, open, onOpenChange }: EditApiResourceDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const current = { id: resource.id, name: resource.name, description: resource.description };
  const form = useForm({ resolver: zodResolver(ZUpdateApiResourceRequest), defaultValues: current });
  const errors = form.formState.errors;
  const update = useMutation(trpc.authorization.resource.update.mutationOptions());
  // Every opening starts from what is stored now (a save changes the resource).
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(current), mutation: update });
  const submit = form.handleSubmit(async (values) => {
    const saved = await settle(update.mutateAsync({ ...values, id: resource.id }));
    if (saved) {
      toast.success(`Saved the API ${saved.name}`);
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button" data-testid="api-resource-edit-open">
          Edit details
        </button>
      }
      title={`Edit the API ${resource.name}`}
      description="Its name and description. The identifier is the audience of tokens already issued, so it never changes: register another API for another identifier."
      onSubmit={submit}
      submitLabel="Save"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not save the API"
      testId="api-resource-edit"
    >
      <Field label="Identifier" hint="Fixed when the API was registered." testId="api-resource-edit-identifier">
        {(control) => <input {...control} readOnly value={resource.identifier} data-testid="api-resource-edit-identifier" />}
      </Field>
      <Field label="Name" error={errors.name?.message} testId="api-resource-edit-name">
        {(control) => <input {...control} autoComplete="off" data-testid="api-resource-edit-name" {...form.register('name')} />}
      </Field>
      <Field label="Description" error={errors.description?.message} testId="api-resource-edit-description">
        {(control) => <textarea {...control} rows={3} data-testid="api-resource-edit-description" {...form.register('description')} />}
      </Field>
    </FormDialog>
  );
}

type AddPermissionDialogProps = { resource: TApiResource; open: boolean; onOpenChange: (open: boolean) => void };

/** "Add permission" on a resource's page: a name unique across the product, and what it allows. */
export function AddPermissionDialog({ resource, open, onOpenChange }: AddPermissionDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const empty = { id: resource.id, name: '', description: '' };
  const form = useForm({ resolver: zodResolver(ZCreateApiPermissionRequest), defaultValues: empty });
  const errors = form.formState.errors;
  const create = useMutation(trpc.authorization.resource.permission.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(empty), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync({ ...values, id: resource.id }));
    if (created) {
      toast.success(`Added the permission ${created.name}`);
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="api-permission-create-open">
          Add permission
        </button>
      }
      title={`Add a permission to ${resource.name}`}
      description="No role holds it until you give it to one, on the Product roles page or in an organization's custom roles."
      onSubmit={submit}
      submitLabel="Add permission"
      pending={create.isPending}
      pendingLabel="Adding…"
      error={create.error}
      errorTitle="Could not add the permission"
      testId="api-permission-create"
    >
      <Field label="Name" error={errors.name?.message} hint={NAME_HINT} testId="api-permission-create-name">
        {(control) => (
          <input
            {...control}
            autoComplete="off"
            spellCheck={false}
            placeholder="invoices.create"
            className="input--mono"
            data-testid="api-permission-create-name"
            {...form.register('name')}
          />
        )}
      </Field>
      <Field
        label="Description"
        error={errors.description?.message}
        hint="What it allows: “Create invoices”."
        testId="api-permission-create-description"
      >
        {(control) => (
          <input {...control} autoComplete="off" data-testid="api-permission-create-description" {...form.register('description')} />
        )}
      </Field>
    </FormDialog>
  );
}

type EditPermissionDialogProps = { resource: TApiResource; permission: TApiPermission; onClose: () => void };

/** "Edit description…" from a permission's menu: only the description changes (roles and tokens hold the name). */
export function EditPermissionDialog({ resource, permission, onClose }: EditPermissionDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const form = useForm({
    resolver: zodResolver(ZUpdateApiPermissionRequest),
    defaultValues: { id: resource.id, name: permission.name, description: permission.description },
  });
  const errors = form.formState.errors;
  const update = useMutation(trpc.authorization.resource.permission.update.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const saved = await update.mutateAsync({ ...values, id: resource.id, name: permission.name }).catch(() => undefined);
    if (saved) {
      toast.success(`Saved the permission ${saved.name}`);
      await invalidate();
      onClose();
    }
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={`Edit the permission ${permission.name}`}
      description="Its description, which admins read when they pick permissions for a role. The name stays: roles and tokens hold it."
      onSubmit={submit}
      submitLabel="Save"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not save the permission"
      testId="api-permission-edit"
    >
      <Field label="Description" error={errors.description?.message} testId="api-permission-edit-description">
        {(control) => (
          <input {...control} autoComplete="off" data-testid="api-permission-edit-description" {...form.register('description')} />
        )}
      </Field>
    </FormDialog>
  );
}
