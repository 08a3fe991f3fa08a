import { zodResolver } from '@hookform/resolvers/zod';
import { type TProductRole, ZCreateProductRoleRequest, ZUpdateProductRoleRequest } from '@svc/contracts/authorization';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { toast } from 'sonner';
import { dialogMutation, FormDialog } from '../../components/dialog.tsx';
import { Field } from '../../components/field.tsx';
import { ProductPermissionPicker } from '../../components/product-permission-picker.tsx';
import { useTRPC } from '../../trpc.ts';
import { useInvalidateCatalog } from './api-resource-dialogs.tsx';

const EMPTY = { key: '', name: '', description: '', permissions: [] as string[] };

type CreateProductRoleDialogProps = {
  /** The workspace the catalog is read in (a platform admin may read it in any). */
  slug: string;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** After the role is stored and the dialog has closed (the page shows the first page). */
  onCreated: () => void;
};

/** "Create product role" (the page header's primary button): key, name, description, permissions by API. */
export function CreateProductRoleDialog({ slug, open, onOpenChange, onCreated }: CreateProductRoleDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const form = useForm({ resolver: zodResolver(ZCreateProductRoleRequest), defaultValues: EMPTY });
  const errors = form.formState.errors;
  const create = useMutation(trpc.authorization.productRole.create.mutationOptions());
  const { close, settle } = dialogMutation({ onOpenChange, forget: () => form.reset(EMPTY), mutation: create });
  const submit = form.handleSubmit(async (values) => {
    const created = await settle(create.mutateAsync(values));
    if (created) {
      toast.success(`Created the product role ${created.name}`);
      onCreated();
      await invalidate();
    }
  });

  return (
    <FormDialog
      open={open}
      onOpenChange={close}
      trigger={
        <button type="button" className="button button--primary" data-testid="product-role-create-open">
          Create product role
        </button>
      }
      title="Create product role"
      description="Every organization gets it at once, to give to members and invitations by its key. In svc's console its holders have what organization members have."
      wide
      onSubmit={submit}
      submitLabel="Create role"
      pending={create.isPending}
      pendingLabel="Creating…"
      error={create.error}
      errorTitle="Could not create the product role"
      testId="product-role-create"
    >
      <div className="form-grid">
        <Field
          label="Key"
          error={errors.key?.message}
          hint="Lower-case letters, digits and _; it cannot be changed later."
          testId="product-role-create-key"
        >
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              placeholder="billing_manager"
              data-testid="product-role-create-key"
              {...form.register('key')}
            />
          )}
        </Field>
        <Field label="Name" error={errors.name?.message} hint="What people see: “Billing manager”." testId="product-role-create-name">
          {(control) => (
            <input
              {...control}
              autoComplete="off"
              placeholder="Billing manager"
              data-testid="product-role-create-name"
              {...form.register('name')}
            />
          )}
        </Field>
      </div>
      <Field
        label="Description"
        error={errors.description?.message}
        hint="Optional: who should hold it."
        testId="product-role-create-description"
      >
        {(control) => (
          <input {...control} autoComplete="off" data-testid="product-role-create-description" {...form.register('description')} />
        )}
      </Field>
      <ProductPermissionPicker
        slug={slug}
        value={form.watch('permissions') ?? []}
        onChange={(next) => form.setValue('permissions', next, { shouldDirty: true, shouldValidate: form.formState.isSubmitted })}
        error={errors.permissions?.message}
        testId="product-role-create-permission"
      />
    </FormDialog>
  );
}

type EditProductRoleDialogProps = { role: TProductRole; slug: string; onClose: () => void };

/**
 * Editing a product role from its menu: a built-in row's permissions only (its name and
 * description are svc's), or another role's name, description and permissions (the key stays).
 */
export function EditProductRoleDialog({ role, slug, onClose }: EditProductRoleDialogProps) {
  const trpc = useTRPC();
  const invalidate = useInvalidateCatalog();
  const form = useForm({
    resolver: zodResolver(ZUpdateProductRoleRequest),
    // The API refuses a built-in row's name and description, even unchanged: they are not sent.
    defaultValues: role.builtin
      ? { id: role.id, permissions: [...role.permissions] }
      : { id: role.id, name: role.name, description: role.description, permissions: [...role.permissions] },
  });
  const errors = form.formState.errors;
  const update = useMutation(trpc.authorization.productRole.update.mutationOptions());
  const submit = form.handleSubmit(async (values) => {
    const saved = await update.mutateAsync({ ...values, id: role.id }).catch(() => undefined);
    if (saved) {
      toast.success(`Saved the product role ${saved.name}`);
      await invalidate();
      onClose();
    }
  });

  return (
    <FormDialog
      open
      onOpenChange={(next) => !next && onClose()}
      title={role.builtin ? `Product permissions of ${role.name}` : `Edit the product role ${role.name}`}
      description={
        role.builtin ? (
          <>
            Every member whose role is <code>{role.key}</code>, in every organization, holds these in your product. Its console permissions
            are svc's and do not change.
          </>
        ) : (
          <>
            Its name, description and permissions, for every organization; the key <code>{role.key}</code> stays, so members and invitations
            keep the role.
          </>
        )
      }
      wide
      onSubmit={submit}
      submitLabel="Save role"
      pending={update.isPending}
      error={update.error}
      errorTitle="Could not update the product role"
      testId="product-role-edit-dialog"
    >
      {!role.builtin && (
        <>
          <Field label="Name" error={errors.name?.message} testId="product-role-edit-name">
            {(control) => <input {...control} autoComplete="off" data-testid="product-role-edit-name" {...form.register('name')} />}
          </Field>
          <Field label="Description" error={errors.description?.message} testId="product-role-edit-description">
            {(control) => (
              <input {...control} autoComplete="off" data-testid="product-role-edit-description" {...form.register('description')} />
            )}
          </Field>
        </>
      )}
      <ProductPermissionPicker
        slug={slug}
        value={form.watch('permissions') ?? []}
        onChange={(next) => form.setValue('permissions', next, { shouldDirty: true, shouldValidate: form.formState.isSubmitted })}
        error={errors.permissions?.message}
        testId="product-role-edit-permission"
      />
    </FormDialog>
  );
}
