import type { Page } from 'playwright-core';

/**
 * Picks an option of the console's Select (a Radix listbox, not a native select): opens the
 * trigger found by `testId` and clicks the option whose value is `value` (`__any` is a status
 * filter's "no filter"). Waits until the trigger shows the choice, so the next step sees it applied.
 */
export async function chooseOption(page: Page, testId: string, value: string): Promise<void> {
  const trigger = page.getByTestId(testId);
  await trigger.click();
  const option = page.getByTestId(`${testId}-option-${value}`);
  const label = (await option.innerText()).trim();
  await option.click();
  await page.waitForFunction(([id, text]) => document.querySelector(`[data-testid="${id}"]`)?.textContent?.includes(text) ?? false, [
    testId,
    label,
  ] as const);
}
