// A person on the approval page, in Debian's Chromium: signs in through the printed address,
// waits for the request whose card shows TOOLGATE_SHOWS, and clicks the TOOLGATE_BUTTON answer.
// Prints the card's text, then "OK" once the card is gone. Run by tests that hold a call waiting
// on the page (crates/toolgate/tests/mcp.rs) with TOOLGATE_URL and TOOLGATE_LOGIN.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const { TOOLGATE_URL: base, TOOLGATE_LOGIN: login, TOOLGATE_SHOWS: shows, TOOLGATE_BUTTON: button } = process.env;
const profile = mkdtempSync(join(tmpdir(), "toolgate-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const timer = setTimeout(() => { console.error("FAIL timed out"); process.exit(1); }, 60_000);
try {
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(`${base}/#login=${login}`);
  await page.locator("#app:not([hidden])").waitFor({ timeout: 20_000 });
  const card = page.locator("article[data-id]", { hasText: shows });
  await card.waitFor({ timeout: 30_000 });
  console.log(await card.innerText());
  await card.getByRole("button", { name: button }).click();
  await card.waitFor({ state: "detached", timeout: 15_000 });
  console.log("OK");
} catch (e) {
  console.error(`FAIL ${e.message}`);
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
