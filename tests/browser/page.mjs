// Drives the approval page in Debian's Chromium: sign in through the printed address, see a
// request arrive, answer it with a click, and check the waiting call proceeds.
// Run by crates/toolgate/tests/page.rs with TOOLGATE_URL, TOOLGATE_LOGIN and TOOLGATE_TOKEN.
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const { TOOLGATE_URL: base, TOOLGATE_LOGIN: login, TOOLGATE_TOKEN: token } = process.env;
const fail = (message) => { console.error(`FAIL ${message}`); process.exitCode = 1; };
const api = (path, init = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" } })
    .then((r) => r.json());

const profile = mkdtempSync(join(tmpdir(), "toolgate-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const timer = setTimeout(() => { fail("timed out"); process.exit(1); }, 60_000);
try {
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });

  // Notifications as a browser gives them, recorded; whether the tab is hidden, set by the test.
  await context.addInitScript(() => {
    window.__notes = [];
    window.__hidden = false;
    let permission = "default";
    window.Notification = class {
      constructor(title, options) { window.__notes.push({ title, ...options }); }
      static get permission() { return permission; }
      static requestPermission() { permission = "granted"; return Promise.resolve(permission); }
    };
    Object.defineProperty(Document.prototype, "hidden", { get: () => window.__hidden });
  });
  await page.goto(`${base}/#login=${login}`);
  await page.locator("#app:not([hidden])").waitFor({ timeout: 20_000 });
  await page.getByText("Nothing is waiting.").waitFor();
  if (page.url().includes("login=")) fail(`the login code stayed in the address: ${page.url()}`);
  // No cookie: a browser would send it to every port of the host, and let any replace it.
  const cookies = await context.cookies();
  if (cookies.length) fail(`the page was given cookies: ${JSON.stringify(cookies)}`);

  // A call arrives and waits.
  const submitted = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push origin main",
                                                 script: `echo ${"y".repeat(700)} && git push --force`,
                                                 note: `start-${"x".repeat(3000)}-the-end` },
                           context: { workspace: "/tmp/project", session: "web" } }),
  });
  if (submitted.decision !== "ask") fail(`expected an ask, got ${JSON.stringify(submitted)}`);
  const waiting = api(`/api/decisions/${submitted.id}?wait=30`);

  const card = page.locator(`article[data-id="${submitted.id}"]`);
  await card.waitFor({ timeout: 15_000 });
  const text = await card.innerText();
  for (const expected of ["bash", "git push origin main", "commits, pushes and rewrites of history are the person's to make",
                          "history (rule)", "/tmp/project", "Allow once", "Deny once",
                          "Always deny `bash`: commands starting with `git push`, for this session", "(waited "]) {
    if (!text.includes(expected)) fail(`the request does not show ${JSON.stringify(expected)}:\n${text}`);
  }
  // Text up to 1,000 characters is shown whole (the end of a long command too); longer text is
  // folded, its fold showing how it starts and how it ends.
  if (!text.includes("&& git push --force")) fail(`a 720-character argument is not shown whole:\n${text}`);
  if (await card.locator("details summary").count() !== 1) fail("the long argument is not folded");
  const fold = await card.locator("details summary").innerText();
  if (!fold.startsWith("start-xx") || !fold.endsWith("xx-the-end") || !fold.includes("2694 more characters"))
    fail(`the fold does not show both ends: ${fold}`);
  if (!(await page.title()).startsWith("(1) ")) fail(`the title does not count the request: ${await page.title()}`);
  // What a person opened stays open while other events come and go.
  await card.locator("details summary").click();
  const passing = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git status" }, context: { workspace: "/tmp/project", session: "web" } }),
  });
  if (passing.decision !== "allow") fail(`expected git status to be allowed: ${JSON.stringify(passing)}`);
  await page.locator("#decisions tbody tr").first().waitFor({ timeout: 15_000 });
  // A decision says what it was about.
  const recent = await page.locator("#decisions tbody tr").first().innerText();
  if (!recent.includes("git status")) fail(`the recent decision does not say what it allowed: ${recent}`);
  // A compound command is shown whole, not only the part that decided.
  const compound = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git status && git log --oneline -3" },
                           context: { workspace: "/tmp/project", session: "web" } }),
  });
  if (compound.decision !== "allow") fail(`expected the compound command to be allowed: ${JSON.stringify(compound)}`);
  await page.locator("#decisions tbody tr", { hasText: "git log --oneline -3" }).first().waitFor({ timeout: 15_000 })
    .catch(() => fail("the decisions table does not show the whole command"));
  if (!(await card.locator("details").evaluate((d) => d.open))) fail("an opened argument closed when another event came");
  if (text.includes("Always allow")) fail("an allow-always was shown though the rule does not offer it");
  const count = await page.locator("#pending-count").innerText();
  if (count !== "1") fail(`the count shows ${count}`);

  await card.getByRole("button", { name: "Allow once" }).click();
  const decided = await waiting;
  if (decided.decision !== "allow" || decided.actor !== "web") fail(`the call was not released: ${JSON.stringify(decided)}`);
  await card.waitFor({ state: "detached", timeout: 15_000 });
  await page.locator("#decisions tbody tr td.allow").first().waitFor({ timeout: 15_000 });

  // The session is the key in this origin's storage, which pages on other ports of the host
  // cannot read: a request without it is refused.
  const key = await page.evaluate(() => (JSON.parse(localStorage.getItem("toolgate-key") || "{}")).key);
  if (!key) fail("the page keeps no session key");
  const before = problems.length;
  const bare = await page.evaluate(() => fetch("/api/pending", { credentials: "same-origin" }).then((r) => r.status));
  if (bare !== 401) fail(`a request without the key was answered ${bare}`);
  // (The browser logs that refusal as a failed load: it was asked for.)
  problems.splice(before, problems.length - before, ...problems.slice(before).filter((p) => !p.includes("401")));

  // A reload keeps the tab signed in, and the live list goes on; text that would reorder
  // itself on screen shows its hidden characters.
  await page.reload();
  await page.locator("#app:not([hidden])").waitFor({ timeout: 20_000 });
  await page.getByText("Nothing is waiting.").waitFor();
  const second = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push \u202Egnp.exe or\u00ADigin \u{E0072}" },
                           context: { workspace: "/tmp/project", session: "web" } }),
  });
  const refused = api(`/api/decisions/${second.id}?wait=30`);
  const next = page.locator(`article[data-id="${second.id}"]`);
  await next.waitFor({ timeout: 15_000 });
  const shown = await next.innerText();
  if (!shown.includes("git push <U+202E>gnp.exe or<U+00AD>igin <U+E0072>")) fail(`the hidden characters are not shown:\n${shown}`);
  // Right-to-left letters cannot reorder what is around them: shown in the order written.
  const bidi = await next.locator("pre").first().evaluate((node) => getComputedStyle(node).unicodeBidi);
  if (bidi !== "bidi-override") fail(`arguments are shown with unicode-bidi ${bidi}`);
  // A person may say why, or what to do instead; the agent hears it.
  await next.getByRole("textbox", { name: "reason" }).fill("push to a branch instead");
  await next.getByRole("button", { name: "Deny once" }).click();
  const denied = await refused;
  if (denied.decision !== "deny") fail(`the second call was not refused: ${JSON.stringify(denied)}`);
  if (!JSON.stringify(denied).includes("push to a branch instead")) fail(`the reason was not passed on: ${JSON.stringify(denied)}`);
  await page.waitForFunction(() => document.title === "toolgate — approvals", null, { timeout: 15_000 })
    .catch(async () => fail(`the title still counts: ${await page.title()}`));

  // "Always deny" makes a grant the page lists; Revoke takes it back, and the log says the
  // page did it.
  const third = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push origin feature" },
                           context: { workspace: "/tmp/project", session: "web" } }),
  });
  const remembered = api(`/api/decisions/${third.id}?wait=30`);
  const always = page.locator(`article[data-id="${third.id}"]`);
  await always.waitFor({ timeout: 15_000 });
  // The button says what it covers in the scope chosen, for as long as chosen, before the click.
  await always.getByRole("button", { name: "Always deny `bash`: commands starting with `git push`, for this session" }).waitFor();
  await always.getByRole("combobox", { name: "where an always answer applies" }).selectOption("user");
  await always.getByRole("combobox", { name: "how long an always answer lasts" }).selectOption("28800");
  await always.getByRole("button", { name: "Always deny `bash`: commands starting with `git push`, for every session of this user, in every workspace (for 8 hours)" }).click();
  if ((await remembered).decision !== "deny") fail("the always-deny did not refuse the call");
  const grant = page.locator("#grants tbody tr");
  await grant.first().waitFor({ timeout: 15_000 });
  const listed = await grant.first().innerText();
  const made = (await api("/api/grants")).grants[0] || {};
  if (made.scope !== "user" || !made.expires_at) fail(`the grant is not the user's for 8 hours: ${JSON.stringify(made)}`);
  for (const expected of ["deny", "bash", "git push", "user", "until", "web"]) {
    if (!listed.includes(expected)) fail(`the grant does not show ${JSON.stringify(expected)}: ${listed}`);
  }
  await grant.first().getByRole("button", { name: "Revoke" }).click();
  await grant.first().waitFor({ state: "detached", timeout: 15_000 });
  const revoked = await api("/api/audit?type=grant_revoked");
  if (revoked.events?.length !== 1 || revoked.events[0].actor !== "web")
    fail(`the revocation is not logged as the page's: ${JSON.stringify(revoked)}`);
  if ((await api("/api/grants")).grants.length) fail("the grant is still stored after Revoke");

  // "Make a rule" shows the rule a workspace grant amounts to, as a diff of the workspace's
  // policy; "Write the rule" writes it and revokes the grant.
  const workspace = process.env.TOOLGATE_WORKSPACE;
  const fourth = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push origin promote-me" },
                           context: { workspace, session: "web" } }),
  });
  await api(`/api/approvals/${fourth.id}`, { method: "POST", body: JSON.stringify({ decision: "reject-always", scope: "workspace" }) });
  const toPromote = page.locator("#grants tbody tr", { hasText: "git push" }).first();
  await toPromote.waitFor({ timeout: 15_000 });
  await toPromote.getByRole("button", { name: "Make a rule" }).click();
  const promotion = page.locator("#grants tr.promotion");
  await promotion.waitFor({ timeout: 15_000 });
  const proposed = await promotion.innerText();
  for (const expected of [`${workspace}/.toolgate/policy.toml`, 'decision = "deny"', '"git", "push"', "git push origin promote-me"]) {
    if (!proposed.includes(expected)) fail(`the proposed rule does not show ${JSON.stringify(expected)}:\n${proposed}`);
  }
  await promotion.getByRole("button", { name: "Write the rule" }).click();
  await promotion.waitFor({ state: "detached", timeout: 15_000 });
  await toPromote.waitFor({ state: "detached", timeout: 15_000 }).catch(() => fail("the promoted grant is still listed"));
  const written = readFileSync(`${workspace}/.toolgate/policy.toml`, "utf8");
  if (!written.includes("promoted-") || !written.includes("git push origin promote-me")) fail(`the rule was not written: ${written}`);
  const promotedLog = await api("/api/audit?type=grant_revoked");
  const last = promotedLog.events?.[promotedLog.events.length - 1] || {};
  if (last.actor !== "web" || !String(last.promoted || "").endsWith("/.toolgate/policy.toml"))
    fail(`the promotion is not logged as the page's: ${JSON.stringify(last)}`);

  // Asked for, a notification tells of a call that arrives while the tab is hidden.
  const offer = page.locator("#notify");
  if (!(await offer.isVisible())) fail("the page does not offer notifications");
  await offer.click();
  await offer.waitFor({ state: "hidden", timeout: 5_000 });
  await page.evaluate(() => { window.__hidden = true; });
  const behind = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push origin behind-the-tab" },
                           context: { workspace: "/tmp/project", session: "web" } }),
  });
  await page.waitForFunction(() => window.__notes.length > 0, null, { timeout: 15_000 })
    .catch(() => fail("no notification for a call that arrived while the tab was hidden"));
  const notes = await page.evaluate(() => window.__notes);
  if (notes.length !== 1 || notes[0].body !== "bash: git push origin behind-the-tab" || notes[0].tag !== behind.id)
    fail(`the notification says: ${JSON.stringify(notes)}`);
  await page.evaluate(() => { window.__hidden = false; });
  await api(`/api/approvals/${behind.id}`, { method: "POST", body: JSON.stringify({ decision: "reject-once" }) });

  // A policy that fails to load again: a banner says the one in force stays, and why; mended,
  // the banner goes.
  const policyFile = process.env.TOOLGATE_POLICY_FILE;
  const shipped = readFileSync(policyFile, "utf8");
  writeFileSync(policyFile, `${shipped}\n[[rule]]\nname = "broken"\ndecision = "maybe"\n`);
  const banner = page.locator("#policy-banner");
  await banner.waitFor({ state: "visible", timeout: 15_000 });
  const warned = await banner.innerText();
  if (!warned.includes("was not reloaded") || !warned.includes("stays in force") || !warned.includes("maybe"))
    fail(`the banner says: ${warned}`);
  writeFileSync(policyFile, shipped);
  await banner.waitFor({ state: "hidden", timeout: 15_000 })
    .catch(() => fail("the banner stayed once the policy loaded"));

  // Which agent asked, on its card and in the decisions; the lists filtered by agent and session.
  const fromAgent = await api("/api/decisions", {
    method: "POST",
    body: JSON.stringify({ tool: "bash", args: { command: "git push origin agent-branch" },
                           context: { workspace: "/tmp/project", session: "web-2", agent: "claude-code" } }),
  });
  const agentCard = page.locator(`article[data-id="${fromAgent.id}"]`);
  await agentCard.waitFor({ timeout: 15_000 });
  if (!(await agentCard.innerText()).includes("claude-code")) fail("the card does not say which agent asked");
  const byAgent = page.getByRole("searchbox", { name: "filter by agent" });
  const bySession = page.getByRole("searchbox", { name: "filter by session" });
  await byAgent.fill("another-agent");
  await agentCard.waitFor({ state: "detached", timeout: 10_000 }).catch(() => fail("the agent filter kept another agent's request"));
  await byAgent.fill("claude-code");
  await agentCard.waitFor({ timeout: 10_000 }).catch(() => fail("the agent filter hid the agent's request"));
  await bySession.fill("web");
  await agentCard.waitFor({ state: "detached", timeout: 10_000 }).catch(() => fail("the session filter kept another session's request"));
  await bySession.fill("web-2");
  await agentCard.waitFor({ timeout: 10_000 });
  await api(`/api/approvals/${fromAgent.id}`, { method: "POST", body: JSON.stringify({ decision: "reject-once" }) });
  await page.locator("#decisions tbody tr", { hasText: "claude-code" }).first().waitFor({ timeout: 15_000 })
    .catch(() => fail("the decisions table does not say which agent asked"));
  await byAgent.fill("");
  await bySession.fill("");

  // A result from a host the policy does not trust taints its session: the page says which
  // session and why; Clear taint clears it, and the log says the page did.
  await api("/api/sessions/web-3/results", {
    method: "POST",
    body: JSON.stringify({ call: { tool: "WebFetch", args: { url: "https://evil.example/page", prompt: "p" },
                                   context: { workspace: "/tmp/project" } } }),
  });
  const tainted = page.locator('#tainted article[data-session="web-3"]');
  await tainted.waitFor({ timeout: 15_000 }).catch(() => fail("the page does not show the tainted session"));
  const why = await tainted.innerText();
  if (!why.includes("https://evil.example/page")) fail(`the tainted session does not say why: ${why}`);
  await tainted.getByRole("button", { name: "Clear taint" }).click();
  await page.locator("#taint").waitFor({ state: "hidden", timeout: 15_000 })
    .catch(() => fail("the taint section stayed once cleared"));
  const cleared = await api("/api/audit?type=taint_cleared");
  if (cleared.events?.length !== 1 || cleared.events[0].actor !== "web")
    fail(`the clearing is not logged as the page's: ${JSON.stringify(cleared)}`);

  // Times are in one local format; a table cell's words are not cut mid-way.
  await page.locator("#decisions tbody tr", { hasText: "claude-code" }).first().waitFor({ timeout: 15_000 });
  const stamp = await page.locator("#decisions tbody tr td").first().innerText();
  if (/\d{4}-\d{2}-\d{2}T/.test(stamp)) fail(`a decision's time is shown raw: ${stamp}`);
  // (A header cell: the rows are redrawn at every change.)
  const wrap = await page.locator("#decisions thead th").first().evaluate((node) => getComputedStyle(node).overflowWrap);
  if (wrap !== "break-word") fail(`table cells wrap with overflow-wrap ${wrap}`);

  // Signed in once, every tab of the daemon's address is (and a browser restart keeps it);
  // signing out in one signs every tab out, and the session's key is refused from then on.
  const tab = await context.newPage();
  await tab.goto(`${base}/`);
  await tab.locator("#app:not([hidden])").waitFor({ timeout: 20_000 });
  await tab.getByRole("button", { name: "Sign out" }).click();
  await tab.locator("#signin:not([hidden])").waitFor({ timeout: 10_000 });
  await page.locator("#signin:not([hidden])").waitFor({ timeout: 10_000 })
    .catch(() => fail("the first tab stayed signed in after signing out in another"));
  const after = await fetch(`${base}/api/pending`, { headers: { "X-Toolgate-Key": key } });
  if (after.status !== 401) fail(`the signed-out key was answered ${after.status}`);
  await tab.close();

  // A spent or unknown sign-in address says so (in a tab signed out).
  const other = await context.newPage();
  await other.goto(`${base}/#login=${login}`);
  await other.locator("#signin:not([hidden])").waitFor({ timeout: 20_000 });
  const said = await other.locator("#signin-error").innerText();
  if (!said.includes("spent or expired")) fail(`a spent sign-in address says: ${JSON.stringify(said)}`);
  await other.close();
  if (problems.length) fail(problems.join("\n"));
  if (!process.exitCode) console.log(`OK ${submitted.id} ${decided.decision}`);
} catch (error) {
  fail(error.stack || String(error));
} finally {
  clearTimeout(timer);
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
