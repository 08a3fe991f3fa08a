import { Content, Portal, Provider, Root, Trigger } from '@radix-ui/react-tooltip';
import type { ReactElement, ReactNode } from 'react';

type TooltipProps = {
  /** What the tooltip says: a full value, or one short sentence. Never the only way to learn it. */
  content: ReactNode;
  /** The one element it describes; it must take a ref and be hoverable (a button, a span). */
  children: ReactElement;
  /** `mono` for an identifier's full value. */
  mono?: boolean;
};

/**
 * A Radix tooltip on hover and keyboard focus. It supplements, never replaces: whatever it says
 * must also reach a screen reader another way (the element's text or accessible name). Each
 * tooltip brings its own provider, so the Radix code loads with the pages that use it, not with
 * the console's first chunk.
 */
export function Tooltip({ content, children, mono = false }: TooltipProps) {
  return (
    <Provider delayDuration={300}>
      <Root>
        <Trigger asChild>{children}</Trigger>
        <Portal>
          <Content className={mono ? 'tooltip tooltip--mono' : 'tooltip'} sideOffset={6} collisionPadding={8}>
            {content}
          </Content>
        </Portal>
      </Root>
    </Provider>
  );
}
