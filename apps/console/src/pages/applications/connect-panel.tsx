import { SUPPORTED_FRAMEWORKS, type TFramework } from '@svc/contracts/agent-context';
import type { TApplication } from '@svc/contracts/applications';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { CodeBlock } from '../../components/code-block.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { ErrorPanel } from '../../components/error-panel.tsx';
import { Identifier } from '../../components/identifier.tsx';
import { Select } from '../../components/select.tsx';
import { Skeleton } from '../../components/skeleton.tsx';
import { useTRPC } from '../../trpc.ts';

/** How each framework the agent context offers is named in the picker. */
const FRAMEWORK_NAMES: Record<TFramework, string> = {
  nextjs: 'Next.js',
  react: 'React (a single-page app)',
  express: 'Express',
  fastapi: 'FastAPI',
  django: 'Django',
  flask: 'Flask',
  laravel: 'Laravel',
  rails: 'Rails',
  rest: 'Any other server (plain REST)',
  mcp: 'An MCP server (protected by svc)',
};

const OPTIONS = SUPPORTED_FRAMEWORKS.map((value) => ({ value, label: FRAMEWORK_NAMES[value] }));

/** The agent context's Markdown address for one framework: what a coding agent (or curl) fetches. */
export function agentContextUrl(issuer: string, publishableKey: string, framework: TFramework): string {
  const query = new URLSearchParams({ publishable_key: publishableKey, framework, format: 'markdown' });
  return `${issuer}/v1/setup/agent-context?${query}`;
}

/**
 * "Connect your app": the agent context of this application for the framework picked (the
 * public setup route, docs/api.md "Setup context for coding agents"): the command that fetches it
 * and the prompt itself to copy. A browser-only application starts on React, any other on Express.
 */
export function ConnectPanel({ application, issuer }: { application: TApplication; issuer: string }) {
  const trpc = useTRPC();
  const [framework, setFramework] = useState<TFramework>(application.clientType === 'public' ? 'react' : 'express');
  const context = useQuery(trpc.setup.agentContext.queryOptions({ publishable_key: application.publishableKey, framework }));
  const url = agentContextUrl(issuer, application.publishableKey, framework);
  const command = `curl -s '${url}'`;
  return (
    <section className="connect" data-testid="application-connect" aria-labelledby="application-connect-title">
      <h3 id="application-connect-title">Connect your app</h3>
      <p className="muted">
        A prompt to follow word for word (or to hand to a coding agent) in an empty folder: it installs the library, writes the environment
        file and every file of a working sign-in, with this application's values.
      </p>
      <div className="form-row">
        <Select
          aria-label="Framework"
          value={framework}
          onValueChange={setFramework}
          options={OPTIONS}
          testId="application-connect-framework"
        />
        <a className="button" href={url} target="_blank" rel="noreferrer" data-testid="application-connect-open">
          Open as Markdown
        </a>
        {context.data && <CopyButton value={context.data.aiAgentPrompt} label="Copy the prompt" testId="application-connect-copy" />}
      </div>
      <dl className="facts">
        <dt>Fetch it</dt>
        <dd>
          <Identifier value={command} label="command" tail={40} testId="application-connect-command" />
        </dd>
      </dl>
      {context.isPending && <Skeleton label="Loading the agent context…" />}
      {context.isError && (
        <ErrorPanel error={context.error} title="Could not load the agent context" onRetry={() => void context.refetch()} />
      )}
      {context.data && (
        <CodeBlock label={`Agent context for ${FRAMEWORK_NAMES[framework]}`} testId="application-connect-prompt">
          {context.data.aiAgentPrompt}
        </CodeBlock>
      )}
    </section>
  );
}
