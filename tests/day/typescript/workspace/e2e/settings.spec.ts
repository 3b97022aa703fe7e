import { test, expect } from '@playwright/test';

test('theme choice survives a reload', async ({ page }) => {
  await page.goto('/settings');
  await page.getByLabel('Theme').selectOption('dark');
  await page.reload();
  await expect(page.getByLabel('Theme')).toHaveValue('dark');
});
