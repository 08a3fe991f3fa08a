import * as z from 'zod';

/**
 * The console's words for schema issues, installed once (main.tsx) for every form: the forms
 * validate with the contracts' own schemas (docs/conventions.md section 1), whose default messages are written for
 * API clients ("Too small: expected string to have >=1 characters"); an admin reads "Enter a
 * name." under the field instead. A message a schema sets itself (e.g. "Choose at least one
 * scope.") outranks this map, as zod ranks them; an issue this map has no words for keeps zod's.
 */
export function installZodErrorMap(): void {
  z.config({ customError: humanMessage });
}

/** The field as the copy names it: the last key of the issue's path, `expiresAt` -> "expires at". */
function fieldName(path: readonly PropertyKey[] | undefined): string {
  const key = [...(path ?? [])].reverse().find((k): k is string => typeof k === 'string');
  return key === undefined ? 'value' : key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

/** "scopes" -> "scope", "entries" -> "entry": list fields are named in the plural. */
function singular(noun: string): string {
  if (noun.endsWith('ies')) {
    return `${noun.slice(0, -3)}y`;
  }
  return noun.endsWith('s') ? noun.slice(0, -1) : noun;
}

/** Human copy for one issue, or undefined to leave zod's own message. Exported for its test. */
export function humanMessage(issue: z.core.$ZodRawIssue): string | undefined {
  const field = fieldName(issue.path);
  switch (issue.code) {
    case 'too_small': {
      const minimum = Number(issue.minimum);
      if (issue.origin === 'string') {
        return minimum <= 1 ? `Enter ${withArticle(field)}.` : `Use at least ${minimum} characters.`;
      }
      if (issue.origin === 'array' || issue.origin === 'set') {
        return minimum <= 1 ? `Choose at least one ${singular(field)}.` : `Choose at least ${minimum} ${field}.`;
      }
      return `Use ${minimum} or more.`;
    }
    case 'too_big': {
      const maximum = Number(issue.maximum);
      if (issue.origin === 'string') {
        return `Use at most ${maximum} characters.`;
      }
      if (issue.origin === 'array' || issue.origin === 'set') {
        return `Choose at most ${maximum} ${field}.`;
      }
      return `Use ${maximum} or less.`;
    }
    case 'invalid_format':
      switch (issue.format) {
        case 'url':
          return 'Enter a valid https URL.';
        case 'email':
          return 'Enter a valid email address.';
        case 'datetime':
        case 'date':
          return 'Enter a valid date.';
        default:
          return undefined;
      }
    case 'invalid_type':
      // Nothing there at all: the field was left empty.
      return issue.input === undefined || issue.input === null ? `Enter ${withArticle(field)}.` : undefined;
    case 'invalid_value':
      return 'Choose one of the options.';
    default:
      return undefined;
  }
}
