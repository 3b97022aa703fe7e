// toolgate's approval page. Everything shown comes from the API as text (never as HTML).
"use strict";

const LONG = 240; // names and places longer than this are cut
const LONG_TEXT = 1000; // text longer than this is folded (a command up to it is shown whole)
const LONG_VALUE = 400; // structured values longer than this (as JSON) are folded
const END = 160; // a fold shows this much of its start and of its end (less than half of either)
// How long an "always" answer may last, as offered on a card ("" is until revoked).
const LIVES = [["", "until revoked"], ["3600", "for 1 hour"], ["28800", "for 8 hours"], ["86400", "for 1 day"], ["604800", "for 7 days"]];
const SHOWN = 50; // the oldest this many pending requests are shown
const KEY = "toolgate-key"; // the page session's key and when it ends, kept in this origin's storage

// Characters that reorder or hide text (bidirectional controls, zero-width marks) and other
// controls are shown as their code points, so a command reads as it runs.
// Also Unicode's default-ignorable characters (soft hyphen, joiners, variation selectors, tag
// characters that smuggle text), fillers that look like spaces, and line separators.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u205f-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8]|[\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]/gu;
function visible(text) {
  return text.replace(HIDDEN, (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(String(child))));
  }
  return node;
}

// The page session: kept in this origin's local storage (every tab of this daemon's address
// shares it, it outlives a browser restart, and pages on other ports of the host cannot read
// it, as they could a cookie), until it ends or the person signs out.
function sessionKey() {
  try {
    const kept = JSON.parse(localStorage.getItem(KEY) || "null");
    if (kept && typeof kept.key === "string" && kept.until > Date.now()) return kept.key;
  } catch (error) { /* unreadable: none */ }
  localStorage.removeItem(KEY);
  return null;
}

function headers() {
  const key = sessionKey();
  return key ? { "X-Toolgate-Key": key } : {};
}

// A time, in one local format for the whole page.
function when(iso) {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? (iso || "") : new Date(at).toLocaleString([], { dateStyle: "medium", timeStyle: "medium" });
}

// How long ago, in words: "2 min", "1 h 5 min", "40 s".
function since(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (Number.isNaN(seconds)) return "";
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

async function api(method, path, body) {
  const init = { method, headers: headers(), credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (error) { /* said below */ }
  const said = data && data.error && data.error.message;
  // The daemon's own words (a login code spent or expired says so), else what happened.
  if (response.status === 401) throw Object.assign(new Error(said || "signed out"), { status: 401 });
  if (!response.ok) throw new Error(said || response.statusText);
  return data;
}

function target(t) {
  switch (t.kind) {
    case "tool": return "every call";
    case "command": return t.exact ? `exactly \`${t.prefix.join(" ")}\`` : `commands starting with \`${t.prefix.join(" ")}\``;
    case "path": return `the path \`${t.path}\``;
    case "domain": return `the host \`${t.host}\``;
    default: return JSON.stringify(t);
  }
}

function scope(s) {
  return { once: "for the next call only", turn: "for the rest of this turn", session: "in this session",
           workspace: "in this workspace", user: "everywhere" }[s] || s;
}

// What an "always" answer covers, in words: in the scope chosen (`chosen`), when the request
// offers scopes, else in its one scope.
function label(choice, request, chosen) {
  const covers = (request.always || []).find((a) => a.choice === choice);
  const offer = covers && (covers.scopes || []).find((s) => s.scope === chosen);
  const what = offer ? offer.covers
    : covers ? `${covers.targets.map(target).join("; ")} of \`${request.tool}\` ${scope(covers.scope)}` : "";
  switch (choice) {
    case "allow-once": return "Allow once";
    case "reject-once": return "Deny once";
    case "allow-always": return `Always allow ${what}`;
    case "reject-always": return `Always deny ${what}`;
    default: return choice;
  }
}

// A value of the call: text is shown whole up to LONG_TEXT characters (a person approves the
// command they read, all of it); longer text, and long structured values, are folded, the fold
// showing the start and the end (where a `&& …` would be) and how much lies between.
function folded(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const chars = [...text]; // code points, as the counts say them
  if (chars.length <= (typeof value === "string" ? LONG_TEXT : LONG_VALUE)) return el("pre", {}, text);
  const [start, end] = [chars.slice(0, END).join(""), chars.slice(-END).join("")];
  const between = chars.length - 2 * END;
  return el("details", {},
    el("summary", {}, el("span", { class: "shown" }, start), ` … ${between} more characters (open to read them all) … `, el("span", { class: "shown" }, end)),
    el("pre", {}, text));
}

// When a request gives up waiting, as local time.
function deadline(item, request) {
  const created = Date.parse(item.created);
  if (!request.timeout_ms || Number.isNaN(created)) return "—";
  return when(new Date(created + request.timeout_ms).toISOString());
}

// A name or place, at most LONG characters on the card (the rest is said, not shown).
function short(text) {
  const value = String(text);
  return value.length <= LONG ? value : `${value.slice(0, LONG)}… (${value.length - LONG} more characters)`;
}

function argumentsList(args) {
  const list = el("dl", {});
  for (const [key, value] of Object.entries(args || {})) {
    list.append(el("dt", {}, key), el("dd", {}, folded(value)));
  }
  return list;
}

// The cards are kept from one refresh to the next (a request does not change while it
// waits): what a person opened stays open, and only arrivals and departures touch the list.
// Requests already shown: a notification is for one that arrives while the tab is hidden.
let seen = null;

// What a waiting call is about, in one line: its tool and its first text argument.
function gist(item) {
  const request = (item.request && item.request.request) || item.request || {};
  const args = request.arguments && typeof request.arguments === "object" ? request.arguments : {};
  const first = Object.values(args).find((v) => typeof v === "string");
  const what = first === undefined ? "" : `: ${first.length > 120 ? `${first.slice(0, 120)}…` : first}`;
  return visible(`${short(request.tool || item.kind || "a call")}${what}`);
}

function notify(fresh) {
  if (!document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  for (const item of fresh) {
    try {
      const note = new Notification("toolgate: a call is waiting for you", { body: gist(item), tag: item.id });
      note.onclick = () => { window.focus(); note.close(); };
    } catch (error) { return; /* a browser that shows them only from a service worker */ }
  }
}

function renderPending(pending, total) {
  const fresh = seen === null ? [] : pending.filter((item) => !seen.has(item.id));
  seen = new Set(pending.map((item) => item.id));
  notify(fresh);
  const box = document.getElementById("pending");
  document.getElementById("pending-count").textContent = String(total);
  // A tab in the background says it too.
  document.title = total > 0 ? `(${total}) toolgate — approvals` : "toolgate — approvals";
  const wanted = new Set(pending.map((item) => item.id));
  const kept = new Map();
  for (const node of [...box.children]) {
    if (node.dataset.id && wanted.has(node.dataset.id)) kept.set(node.dataset.id, node);
    else node.remove();
  }
  if (pending.length === 0) {
    box.append(el("p", { class: "empty" }, "Nothing is waiting."));
    return;
  }
  let previous = null;
  if (total > pending.length) {
    previous = el("p", { class: "more" }, `The oldest ${pending.length} of ${total} waiting requests are shown; answering them shows the next.`);
    box.prepend(previous);
  }
  for (const item of pending) {
    const card = kept.get(item.id) || card_for(item);
    const at = previous ? previous.nextSibling : box.firstChild;
    if (card !== at) box.insertBefore(card, at);
    previous = card;
  }
}

function card_for(item) {
  const request = (item.request && item.request.request) || item.request || {};
  const call = (item.request && item.request.call) || {};
  const context = call.context || {};
  const buttons = el("div", { class: "choices" });
  const why = el("input", { class: "why", type: "text", maxlength: "500", placeholder: "a word for the agent (optional): why, or what to do instead", "aria-label": "reason" });
  // Where an "always" answer applies and how long, when the request offers a choice: the
  // buttons say what they would cover before they are clicked.
  const offers = ((request.always || [])[0] || {}).scopes || [];
  const scopeSelect = el("select", { class: "scope", "aria-label": "where an always answer applies" },
    ...offers.map((o) => el("option", { value: o.scope }, { session: "this session", workspace: "this workspace", user: "every workspace" }[o.scope] || o.scope)));
  const life = el("select", { class: "life", "aria-label": "how long an always answer lasts" },
    ...LIVES.map(([value, text]) => el("option", { value }, text)));
  const relabel = () => {
    for (const b of buttons.querySelectorAll("button[data-choice$='-always']")) {
      const lasting = life.value ? ` (${life.selectedOptions[0].textContent})` : "";
      b.textContent = visible(label(b.dataset.choice, request, scopeSelect.value) + lasting);
    }
  };
  scopeSelect.addEventListener("change", relabel);
  life.addEventListener("change", relabel);
  for (const choice of request.choices || []) {
    const allows = choice.startsWith("allow");
    buttons.append(el("button", {
      class: allows ? "allow" : "deny",
      "data-choice": choice,
      onclick: async () => {
        for (const b of buttons.querySelectorAll("button")) b.disabled = true;
        try {
          const answer = { decision: choice, by: "web" };
          if (why.value.trim()) answer.reason = why.value.trim();
          if (choice.endsWith("-always") && offers.length > 0) answer.scope = scopeSelect.value;
          if (choice.endsWith("-always") && life.value) answer.expires_in = Number(life.value);
          await api("POST", `/api/approvals/${encodeURIComponent(item.id)}`, answer);
        } catch (error) {
          buttons.querySelectorAll(".error").forEach((e) => e.remove());
          buttons.append(el("span", { class: "error" }, ` ${error.message}`));
          for (const b of buttons.querySelectorAll("button")) b.disabled = false;
        }
        refresh();
      },
    }, label(choice, request, scopeSelect.value)));
  }
  const always = (request.choices || []).some((c) => c.endsWith("-always"));
  const lasting = always && offers.length > 0
    ? el("div", { class: "lasting" }, el("label", {}, "always applies to ", scopeSelect), el("label", {}, " ", life))
    : "";
  relabel();
  return el("article", { class: "request", "data-id": item.id },
    el("h3", {}, short(request.tool || item.kind)),
    el("dl", {},
      el("dt", {}, "reason"), el("dd", {}, request.reason || ""),
      el("dt", {}, "rule"), el("dd", {}, request.rule ? `${request.rule} (${request.layer})` : request.layer || ""),
      el("dt", {}, "workspace"), el("dd", {}, short(request.workspace || context.workspace || "—")),
      el("dt", {}, "session"), el("dd", {}, short(item.session || "—")),
      el("dt", {}, "agent"), el("dd", {}, short(context.agent || "—")),
      el("dt", {}, "requested"), el("dd", { class: "requested", "data-created": item.created }, `${when(item.created)} (waited ${since(item.created)})`),
      el("dt", {}, "waits until"), el("dd", {}, `${deadline(item, request)} (then it is refused)`)),
    el("h4", {}, "arguments"),
    argumentsList(request.arguments),
    why,
    lasting,
    buttons);
}

// A policy that failed to load again: the one in force stays, and the person is told why.
function renderPolicy(policy) {
  const banner = document.getElementById("policy-banner");
  const failed = policy && policy.reload_failed;
  banner.hidden = !failed;
  banner.textContent = failed
    ? visible(`The policy was not reloaded at ${new Date(Date.parse(failed.at)).toLocaleTimeString()}: the one loaded at ${new Date(Date.parse(policy.loaded_at)).toLocaleTimeString()} stays in force. ${failed.reason}`)
    : "";
}

function renderDecisions(events) {
  const body = document.querySelector("#decisions tbody");
  body.replaceChildren();
  for (const e of events) {
    // The whole command line when the call ran one (the resource is the part that decided).
    const what = e.command || e.resource;
    body.append(el("tr", {},
      el("td", {}, when(e.timestamp)), el("td", {}, e.action || ""), el("td", {}, e.agent ? short(e.agent) : ""), el("td", {}, what ? folded(what) : ""),
      el("td", { class: e.decision || e.layer || "" }, e.decision || (e.layer === "withdrawn" ? "withdrawn" : "")),
      el("td", {}, e.actor || ""),
      el("td", {}, e.reason || "")));
  }
}

// The sessions a result tainted, from the log (newest first): each with what tainted it since
// it was last cleared, and a button that clears it.
function renderTaint(events) {
  const tainted = new Map();
  for (const e of [...events].reverse()) {
    if (!e.session) continue;
    if (e.type === "taint_cleared") tainted.delete(e.session);
    else tainted.set(e.session, [...(tainted.get(e.session) || []), e]);
  }
  const box = document.getElementById("tainted");
  box.replaceChildren();
  for (const [session, sources] of tainted) {
    box.append(el("article", { class: "tainted", "data-session": session },
      el("h3", {}, `session ${short(session)}`),
      el("ul", {}, ...sources.map((e) => el("li", {}, `${when(e.timestamp)}: ${e.reason || ""}`))),
      el("button", { type: "button", onclick: async () => {
        await api("DELETE", `/api/sessions/${encodeURIComponent(session)}/taint?by=web`);
        refresh();
      } }, "Clear taint")));
  }
  document.getElementById("taint").hidden = tainted.size === 0;
}

// Where a grant holds: its scope and the session or workspace it names.
function where(g) {
  if (g.session) return `${g.scope}: ${short(g.session)}${g.branch ? ` (${short(g.branch)}, turn ${g.turn})` : ""}`;
  if (g.root) return `${g.scope}: ${short(g.root)}`;
  return g.scope || "";
}

// Where a grant holds, and until when when it expires (local time).
function whereAndUntil(g) {
  const until = g.expires_at ? `, until ${new Date(Date.parse(g.expires_at)).toLocaleString()}` : "";
  return `${where(g)}${until}`;
}

// The grant being made a rule: its id, and the change shown (or why it cannot be), kept across
// the redraws events cause until the person writes it or cancels.
let promoting = null;

async function showPromotion(id) {
  try {
    promoting = { id, shown: await api("POST", `/api/grants/${encodeURIComponent(id)}/promote`, {}) };
  } catch (error) {
    promoting = { id, error: error.message };
  }
  refresh();
}

function promotionRow(g) {
  const close = el("button", { type: "button", onclick: () => { promoting = null; refresh(); } }, "Cancel");
  if (promoting.error) {
    return el("tr", { class: "promotion" }, el("td", { colspan: "6" },
      el("p", { class: "error" }, `No rule: ${promoting.error}`), close));
  }
  const shown = promoting.shown;
  const notes = (shown.superseded || []).map((name) => el("p", { class: "note" },
    `Rule \`${name}\` asks no more for what the new rule covers: remove it, or narrow it.`));
  if (!shown.example) notes.push(el("p", { class: "note" }, "The call that made the grant is no longer in the log: the rule has no example."));
  return el("tr", { class: "promotion" }, el("td", { colspan: "6" },
    el("p", {}, `Into ${shown.file}, then the grant is revoked:`),
    el("pre", {}, shown.diff), ...notes,
    el("div", { class: "choices" },
      el("button", { type: "button", class: "allow", onclick: async () => {
        try {
          await api("POST", `/api/grants/${encodeURIComponent(g.id)}/promote`, { write: true, by: "web" });
          promoting = null;
        } catch (error) {
          promoting = { id: g.id, error: error.message };
        }
        refresh();
      } }, "Write the rule"),
      close)));
}

function renderGrants(grants, total) {
  const body = document.querySelector("#grants tbody");
  body.replaceChildren();
  // The daemon lists a page of 1,000, the oldest first.
  if (total > grants.length) {
    body.append(el("tr", {}, el("td", { colspan: "6" },
      `The oldest ${grants.length} of ${total} are shown; \`toolgate grants\` lists them all.`)));
  }
  for (const g of grants) {
    body.append(el("tr", { "data-id": g.id },
      el("td", { class: g.effect === "allow" ? "allow" : "deny" }, g.effect), el("td", {}, g.tool),
      el("td", {}, target(g.target)), el("td", {}, whereAndUntil(g)), el("td", {}, g.created_by),
      el("td", {},
        el("button", { onclick: async () => { await api("DELETE", `/api/grants/${encodeURIComponent(g.id)}?by=web`); refresh(); } }, "Revoke"),
        el("button", { onclick: () => showPromotion(g.id) }, "Make a rule"))));
    if (promoting && promoting.id === g.id) body.append(promotionRow(g));
  }
}

let streaming = false;
let refreshing = false;
let again = false;

// One refresh at a time; changes that arrive meanwhile make one more, not one each.
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      await load();
    } while (again);
  } finally {
    refreshing = false;
  }
}

async function load() {
  try {
    const session = document.getElementById("filter-session").value.trim();
    const agent = document.getElementById("filter-agent").value.trim();
    const inSession = session ? `&session=${encodeURIComponent(session)}` : "";
    const [pending, audit, grants, policy, taints] = await Promise.all([
      api("GET", `/api/pending?limit=${SHOWN}${inSession}`),
      // (The agent is picked out here: the newest 200, those of the agent among them.)
      api("GET", `/api/audit?type=decision,permission_resolved&last=${agent ? 200 : 20}${inSession}`),
      api("GET", "/api/grants"),
      api("GET", "/api/policy"),
      api("GET", `/api/audit?type=session_tainted,taint_cleared&last=500${inSession}`),
    ]);
    renderPolicy(policy);
    renderTaint(taints.events);
    const byAgent = (who) => !agent || who === agent;
    const waiting = pending.pending.filter((item) => byAgent(((item.request && item.request.call) || {}).context?.agent));
    renderPending(waiting, agent ? waiting.length : pending.total);
    renderDecisions(audit.events.filter((e) => byAgent(e.agent)).slice(0, 20));
    renderGrants(grants.grants, grants.total);
    showApp();
  } catch (error) {
    if (error.status === 401) showSignIn();
    else document.getElementById("status").textContent = error.message;
  }
}

// Desktop notifications, when the person asks for them (a browser asks them first).
function offerNotifications() {
  const button = document.getElementById("notify");
  button.hidden = !("Notification" in window) || Notification.permission !== "default";
  button.onclick = async () => {
    await Notification.requestPermission();
    button.hidden = Notification.permission !== "default";
  };
}

function showApp() {
  document.getElementById("signin").hidden = true;
  document.getElementById("app").hidden = false;
  document.getElementById("signout").hidden = false;
  offerNotifications();
  if (!streaming) stream();
}

let lastSeq = 0;

// The event stream, read with fetch (EventSource cannot send the session's key); it resumes
// after the last event seen whenever it breaks.
async function stream() {
  streaming = true;
  const status = document.getElementById("status");
  let pause = 500;
  for (;;) {
    try {
      const response = await fetch("/api/events?after=" + lastSeq, { headers: headers(), credentials: "same-origin" });
      if (response.status === 401) { streaming = false; showSignIn(); return; }
      // The log ends before the last event seen: it is another log (a backup restored, another
      // data directory). Start again from its end, and show what it holds now.
      if (response.status === 409) {
        const newest = await api("GET", "/api/audit?last=1");
        lastSeq = newest.events.length ? newest.events[0].seq : 0;
        refresh();
        continue;
      }
      if (!response.ok || !response.body) throw new Error(response.statusText);
      status.textContent = "live";
      pause = 500;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r/g, "");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const lines = buffer.slice(0, end).split("\n");
          buffer = buffer.slice(end + 2);
          const id = lines.find((line) => line.startsWith("id:"));
          if (id && Number(id.slice(3)) > lastSeq) lastSeq = Number(id.slice(3));
          if (lines.some((line) => line.startsWith("data:"))) refresh();
        }
      }
    } catch (error) { /* the stream broke: reconnect */ }
    status.textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 5000);
  }
}

async function signIn(credential) {
  const session = await api("POST", "/api/login", credential);
  localStorage.setItem(KEY, JSON.stringify({ key: session.key, until: Date.now() + 1000 * session.expires_in }));
}

async function signOut() {
  try { await api("POST", "/api/logout"); } catch (error) { /* ended already */ }
  localStorage.removeItem(KEY);
  showSignIn();
}

function showSignIn() {
  document.getElementById("signout").hidden = true;
  document.getElementById("app").hidden = true;
  document.getElementById("signin").hidden = false;
  document.getElementById("status").textContent = "signed out";
}

async function start() {
  const match = /(?:^#|&)login=([0-9a-f]+)/.exec(location.hash);
  if (match) {
    history.replaceState(null, "", location.pathname);
    try { await signIn({ code: match[1] }); } catch (error) {
      document.getElementById("signin-error").textContent = error.message;
    }
  }
  try {
    const newest = await api("GET", "/api/audit?last=1");
    lastSeq = newest.events.length ? newest.events[0].seq : 0;
  } catch (error) { /* signed out: refresh shows the form */ }
  document.getElementById("signout").addEventListener("click", signOut);
  for (const id of ["filter-session", "filter-agent"]) document.getElementById(id).addEventListener("input", () => refresh());
  // Signed out in another tab: this one follows.
  window.addEventListener("storage", (event) => { if (event.key === KEY && !sessionKey()) showSignIn(); });
  // The "waited" of each card, kept current.
  setInterval(() => {
    for (const node of document.querySelectorAll("dd.requested")) {
      node.textContent = `${when(node.dataset.created)} (waited ${since(node.dataset.created)})`;
    }
  }, 15_000);
  document.getElementById("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = document.getElementById("token").value;
    try {
      await signIn({ token });
      document.getElementById("token").value = "";
      refresh();
    } catch (error) {
      document.getElementById("signin-error").textContent = error.message;
    }
  });
  refresh();
}

start();
