import { it, expect } from 'vitest';
import { createDocument } from 'zod-openapi';
import { ZAgentContextResponse, ZAgentContextRequest } from '@svc/contracts/agent-context';
it('openapi', () => {
  const doc = createDocument({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: { '/x': { get: { requestParams: { query: ZAgentContextRequest }, responses: { '200': { description: 'ok', content: { 'application/json': { schema: ZAgentContextResponse } } } } } } } });
  const s = JSON.stringify(doc);
  console.log(Object.keys((doc.components as any).schemas));
  expect(s).toContain('AgentContext');
});
