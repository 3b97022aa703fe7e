import { test, expect } from '@playwright/test';

test.describe('devices page', () => {
  test('lists devices', async ({ page }) => {
    await page.goto('/devices');
    await expect(page.locator('.device-table tbody tr').first()).toBeVisible();
  });

  test('paginates', async ({ page }) => {
    await page.goto('/devices');
    await page.locator('text=Next').click();
    await expect(page.getByText(/Page 2 of/)).toBeVisible();
  });
});
