// Scopa in a browser: a thin client. The server runs the rules; this page draws its JSON and sends whole moves
// ({card, capture}) and, in Cirulla, knock decisions ({knock}). No build step, no libraries.
"use strict";

const state = { info: null, game: null, hint: null, pendingSummary: [] };
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
const SVG_NS = "http://www.w3.org/2000/svg";

// ------------------------------------------------------------------------------------------------ suits

const ITALIAN_SUITS = {
  // coins (denari)
  d: [["circle", { cx: 20, cy: 20, r: 16, fill: "#e8b923", stroke: "#8a6400", "stroke-width": 2 }],
      ["circle", { cx: 20, cy: 20, r: 9, fill: "none", stroke: "#8a6400", "stroke-width": 2 }],
      ["circle", { cx: 20, cy: 20, r: 3, fill: "#b3261e" }]],
  // cups (coppe)
  c: [["path", { d: "M8 5 H32 C32 17 26 22 22 23 V30 H28 C29 31 29 34 28 35 H12 C11 34 11 31 12 30 H18 V23 C14 22 8 17 8 5 Z",
                 fill: "#c62828", stroke: "#6d1010", "stroke-width": 1.6 }],
      ["path", { d: "M11 9 H29", stroke: "#f4d35e", "stroke-width": 2 }]],
  // swords (spade)
  s: [["path", { d: "M20 2 L24 8 V26 H16 V8 Z", fill: "#b9c9dc", stroke: "#1f3b5c", "stroke-width": 1.5 }],
      ["rect", { x: 9, y: 26, width: 22, height: 4, rx: 2, fill: "#d4a017", stroke: "#6b4e00" }],
      ["rect", { x: 18, y: 30, width: 4, height: 6, fill: "#5d3a1a" }],
      ["circle", { cx: 20, cy: 37, r: 2.5, fill: "#d4a017" }]],
  // clubs (bastoni)
  b: [["path", { d: "M15 3 C22 1 26 6 24 12 L23 35 C23 39 17 39 17 35 L16 13 C12 9 11 4 15 3 Z",
                 fill: "#9a6a35", stroke: "#4a2e10", "stroke-width": 1.6 }],
      ["circle", { cx: 21, cy: 17, r: 2, fill: "#2e7d32" }],
      ["circle", { cx: 18, cy: 25, r: 2, fill: "#2e7d32" }]],
};
const FRENCH_SUITS = { d: ["♦", "#c0121b"], c: ["♥", "#c0121b"], s: ["♠", "#111"], b: ["♣", "#111"] };
const ITALIAN_RANKS = { J: "F", Q: "C", K: "R", T: "10" };
const ITALIAN_FACES = { J: "Fante", Q: "Cavallo", K: "Re" };
const SUIT_NAMES = {
  italian: { d: "coins", c: "cups", s: "swords", b: "clubs" },
  french: { d: "diamonds", c: "hearts", s: "spades", b: "clubs" },
};

function suitSvg(suit) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 40 40");
  svg.setAttribute("aria-hidden", "true");
  if (faces() === "french") {
    const [glyph, color] = FRENCH_SUITS[suit];
    const t = document.createElementNS(SVG_NS, "text");
    Object.entries({ x: 20, y: 34, "text-anchor": "middle", "font-size": 40, fill: color }).forEach(([k, v]) => t.setAttribute(k, v));
    t.textContent = glyph;
    svg.appendChild(t);
  } else {
    for (const [tag, attrs] of ITALIAN_SUITS[suit]) {
      const s = document.createElementNS(SVG_NS, tag);
      Object.entries(attrs).forEach(([k, v]) => s.setAttribute(k, v));
      svg.appendChild(s);
    }
  }
  return svg;
}

function faces() { return $("faces").value; }

function rankLabel(rank) {
  if (faces() === "italian") return ITALIAN_RANKS[rank] || rank;
  return rank === "T" ? "10" : rank;
}

function cardEl(card, small) {
  const c = el("div", `card s-${card.suit}` + (small ? " small" : ""));
  c.dataset.card = card.code;
  c.title = `${cardText(card)} (${card.code}), value ${card.value}`;
  c.setAttribute("aria-label", c.title);
  for (const pos of ["tl", "br"]) {
    const corner = el("div", `corner ${pos}`, rankLabel(card.rank));
    corner.appendChild(suitSvg(card.suit));
    c.appendChild(corner);
  }
  const pip = suitSvg(card.suit);
  pip.classList.add("pip");
  c.appendChild(pip);
  const face = faces() === "italian" ? ITALIAN_FACES[card.rank] : null;
  if (face) c.appendChild(el("div", "face", face));
  return c;
}

const RANK_NAMES = {
  italian: { A: "Asso", J: "Fante", Q: "Cavallo", K: "Re", T: "10" },
  french: { A: "Ace", J: "Jack", Q: "Queen", K: "King", T: "10" },
};
const cardText = (card) => `${RANK_NAMES[faces()][card.rank] || card.rank} of ${SUIT_NAMES[faces()][card.suit]}`;
const captureText = (cards) => cards.map(cardText).join(", ");
const KNOCK_LABELS = {
  none: "No knock",
  sum: "Knock: 9 or less (3 points)",
  tris: "Knock: three of a kind (10 points)",
};
const KNOCK_WORDS = { sum: "by sum, 9 or less", tris: "with three of a kind" };
const CAPTURE_KINDS = { fifteen: "fifteen", "ace-takes-all": "ace takes all", sum: "sum", equal: "same rank" };

// ------------------------------------------------------------------------------------------------ API

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  const data = await res.json().catch(() => ({ error: `bad answer from the server (${res.status})` }));
  if (!res.ok) throw new Error(data.error || `request failed (${res.status})`);
  return data;
}

function say(text) { $("message").textContent = text || ""; }

// ------------------------------------------------------------------------------------------------ set-up

function variantInfo() { return state.info.variants.find((v) => v.name === $("variant").value); }

function fillBots() {
  const v = variantInfo();
  for (const id of ["opponent", "partner"]) {
    const sel = $(id);
    sel.replaceChildren(...v.bots.map((b) => { const o = el("option", null, b); o.value = b; return o; }));
    sel.value = v.default_bot;
  }
  $("partner-label").hidden = !v.teams;
}

async function init() {
  state.info = await api("GET", "/api/info");
  const sel = $("variant");
  for (const v of state.info.variants) {
    const o = el("option", null, `${v.name} — ${v.description}`);
    o.value = v.name;
    sel.appendChild(o);
  }
  sel.value = "classic";
  fillBots();
  sel.addEventListener("change", fillBots);
  $("setup").addEventListener("submit", (e) => { e.preventDefault(); newGame(); });
  $("faces").addEventListener("change", () => { document.body.classList.toggle("french", faces() === "french"); if (state.game) render(); });
  $("chooser-cancel").addEventListener("click", () => { $("chooser").hidden = true; });
  $("hint-button").addEventListener("click", getHint);
  $("next-hand").addEventListener("click", nextSummary);
  $("rematch").addEventListener("click", rematch);
  say("Choose a variant and your opponents, then start a new game.");
}

async function newGame() {
  const v = variantInfo();
  const body = { variant: v.name, opponent: $("opponent").value };
  if (v.deck === "french52") $("faces").value = "french";  // a 52-card deck: French faces fit it
  if (v.teams) body.partner = $("partner").value;
  try {
    const game = await api("POST", "/api/games", body);
    show(game);
    const todo = game.knock_options.length ? "Your cards allow a knock: choose above your hand." : "Click a card to play it.";
    say(`New ${v.name} match against ${body.opponent}. ${todo}`);
  } catch (e) { say(e.message); }
}

async function rematch() {
  try {
    show(await api("POST", `/api/games/${state.game.id}/rematch`, {}));
    say("Rematch! Good luck.");
  } catch (e) { say(e.message); }
}

// ------------------------------------------------------------------------------------------------ playing

async function play(card, capture) {
  $("chooser").hidden = true;
  try {
    show(await api("POST", `/api/games/${state.game.id}/move`, { card, capture }));
  } catch (e) { say(e.message); }
}

async function knock(choice) {
  try {
    show(await api("POST", `/api/games/${state.game.id}/knock`, { knock: choice }));
  } catch (e) { say(e.message); }
}

function onHandClick(card) {
  const g = state.game;
  const options = g.moves[card.code];
  if (!g.your_turn) { say("Wait: it is not your turn."); return; }
  if (g.knock_options.length) { say("First decide whether to knock (the buttons above your hand)."); return; }
  if (!options) { say(`You cannot play ${card.code} now.`); return; }
  if (options.length === 1) { play(card.code, options[0]); return; }
  // several legal captures: let the player choose
  $("chooser-title").textContent = `${cardText(card)} can capture in ${options.length} ways — which?`;
  const box = $("capture-options");
  box.replaceChildren();
  const byCode = Object.fromEntries(g.table.map((c) => [c.code, c]));
  const kinds = (g.move_kinds || {})[card.code] || [];
  options.forEach((cap, i) => {
    const b = el("button", "capture-option");
    b.type = "button";
    b.dataset.capture = cap.join(" ");
    b.dataset.kind = kinds[i] || "";
    b.title = `option ${i + 1}: take ${cap.join(" ")}` + (kinds[i] ? ` (${CAPTURE_KINDS[kinds[i]] || kinds[i]})` : "");
    const row = el("div", "cards-row");
    cap.forEach((code) => row.appendChild(cardEl(byCode[code], true)));
    b.appendChild(row);
    if (g.cirulla && kinds[i]) b.appendChild(el("span", "capture-kind", CAPTURE_KINDS[kinds[i]] || kinds[i]));
    b.addEventListener("click", () => play(card.code, cap));
    box.appendChild(b);
  });
  $("chooser").hidden = false;
}

async function getHint() {
  try {
    const h = await api("POST", `/api/games/${state.game.id}/hint`, {});
    state.hint = h;
    if (h.knock) {
      $("hint").textContent = `${h.bot} suggests: ${KNOCK_LABELS[h.knock]}`;
      render();
      return;
    }
    let text = `${h.bot} suggests ${cardText(h.card)}` + (h.capture.length ? ` taking ${captureText(h.capture)}` : ", laid on the table");
    if (h.options.length) text += ` (${Math.round(100 * h.options[0].prob)}%)`;
    $("hint").textContent = text;
    render();
  } catch (e) { say(e.message); }
}

// ------------------------------------------------------------------------------------------------ drawing

function show(game) {
  state.game = game;
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  state.hint = null;
  $("hint").textContent = "";
  $("game").hidden = false;
  state.pendingSummary = game.events.filter((e) => e.type === "hand_over" || e.type === "match_over");
  const logged = game.events.filter((e) => LOGGED.has(e.type));
  if (logged.length) say(logged.map(describeEvent).join(" · "));
  else if (game.knock_options.length) say("Your cards allow a knock: choose above your hand.");
  render();
  nextSummary();
}

const LOGGED = new Set(["move", "knock", "table_take"]);

function describeEvent(m) {
  if (m.type === "knock") {
    if (m.kind === "none") return `${m.who}: no knock`;
    return `${m.who}: knock ${KNOCK_WORDS[m.kind]} (+${m.points}), showing ${captureText(m.cards)}`;
  }
  if (m.type === "table_take") {
    const scope = m.scope === 1 ? "a scopa" : `${m.scope} scope`;
    return `The table as dealt (${captureText(m.cards)}) makes ${m.total}: taken by ${m.who} (the dealer's side) with ${scope}`;
  }
  let t = `${m.who}: ${cardText(m.card)}` + (m.capture.length ? ` takes ${captureText(m.capture)}` : " laid");
  if (m.kind === "fifteen") t += " (fifteen)";
  if (m.kind === "ace-takes-all") t += " (ace takes all)";
  if (m.scopa) t += " — SCOPA!";
  return t;
}

function sideName(g, side) { return g.sides[side].name; }

function nextSummary() {
  const g = state.game;
  const ev = state.pendingSummary.shift();
  if (!ev) { $("overlay").hidden = true; return; }
  const body = $("summary-body");
  body.replaceChildren();
  $("rematch").hidden = true;
  $("next-hand").hidden = false;
  if (ev.type === "hand_over") {
    $("summary-title").textContent = `Hand ${ev.hand} points`;
    if (ev.leftover.length) {
      const who = ev.leftover_side >= 0 ? sideName(g, ev.leftover_side) : "nobody";
      body.appendChild(el("p", null, `Cards left on the table (${captureText(ev.leftover)}) go to ${who}.`));
    }
    const t = el("table");
    const fields = Object.keys(ev.points[0]);
    const head = el("tr");
    head.appendChild(el("th", null, ""));
    fields.forEach((f) => head.appendChild(el("th", null, f)));
    head.appendChild(el("th", null, "score"));
    t.appendChild(head);
    ev.points.forEach((p, s) => {
      const tr = el("tr");
      tr.appendChild(el("td", null, sideName(g, s)));
      fields.forEach((f) => tr.appendChild(el("td", null, String(p[f]))));
      tr.appendChild(el("td", "hand-score", String(ev.scores[s])));
      t.appendChild(tr);
    });
    body.appendChild(t);
    const more = state.pendingSummary.some((e) => e.type === "match_over");
    $("next-hand").textContent = more ? "See the result" : "Next hand";
  } else if (ev.type === "match_over") {
    const won = ev.winner === g.sides.findIndex((s) => s.mine);
    $("summary-title").textContent = won ? "You win the match!" : `${sideName(g, ev.winner)} wins the match`;
    $("summary-title").dataset.result = won ? "win" : "loss";
    body.appendChild(el("p", "final-scores", "Final scores: " + ev.scores.map((x, s) => `${sideName(g, s)} ${x}`).join(", ")));
    $("next-hand").hidden = true;
    $("rematch").hidden = false;
  }
  $("overlay").hidden = false;
}

function render() {
  const g = state.game;
  document.body.classList.toggle("french", faces() === "french");
  // other seats: card backs, never their faces (the server does not send them)
  const others = $("others");
  others.replaceChildren();
  for (const s of g.seats) {
    if (s.seat === g.you) continue;
    const box = el("div", "seat" + (s.seat === g.current && !g.done ? " to-act" : ""));
    box.dataset.seat = s.seat;
    box.appendChild(el("div", null, `Seat ${s.seat}: ${s.label}` + (s.seat === g.dealer ? " · dealer" : "")));
    const backs = el("div", "backs");
    // cards shown by a knock are public: face up (the server sends only those)
    for (const c of s.revealed || []) { const e = cardEl(c, true); e.classList.add("revealed"); backs.appendChild(e); }
    for (let i = (s.revealed || []).length; i < s.cards_in_hand; i++) backs.appendChild(el("div", "back"));
    box.appendChild(backs);
    others.appendChild(box);
  }
  $("stock-info").textContent = `· hand ${g.hand_no}, deal ${g.deal_no}/${g.num_deals} · ${g.stock} cards in the stock`;
  const hinted = state.hint && state.hint.card ? new Set([state.hint.card.code, ...state.hint.capture.map((c) => c.code)]) : new Set();
  const lastPlayed = new Set(g.events.filter((e) => e.type === "move").flatMap((m) => [m.card.code]));
  const table = $("table");
  table.replaceChildren(...g.table.map((c) => {
    const e = cardEl(c);
    if (hinted.has(c.code)) e.classList.add("hinted");
    return e;
  }));
  if (!g.table.length) table.appendChild(el("span", "empty", "(the table is empty)"));
  const mine = new Set((g.seats[g.you].revealed || []).map((c) => c.code));
  const hand = $("hand");
  hand.replaceChildren(...g.hand.map((c) => {
    const e = cardEl(c);
    e.classList.add(g.moves[c.code] ? "playable" : "unplayable");
    if (mine.has(c.code)) { e.classList.add("revealed"); e.title += " — shown to everyone (your knock)"; }
    if (hinted.has(c.code)) e.classList.add("hinted");
    if (lastPlayed.has(c.code)) e.classList.add("just-played");
    e.tabIndex = 0;
    e.setAttribute("role", "button");
    e.addEventListener("click", () => onHandClick(c));
    e.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onHandClick(c); } });
    return e;
  }));
  const knocking = g.knock_options.length > 0;
  $("turn-info").textContent = g.done ? "· match over" : knocking ? "· your turn: knock or not?" : g.your_turn ? "· your turn: click a card" : "";
  $("knock").hidden = !knocking;
  $("knock-options").replaceChildren(...g.knock_options.map((k) => {
    const b = el("button", "knock-option" + (state.hint && state.hint.knock === k ? " hinted" : ""), KNOCK_LABELS[k]);
    b.type = "button";
    b.dataset.knock = k;
    b.addEventListener("click", () => knock(k));
    return b;
  }));
  $("hint-button").disabled = !g.your_turn;
  $("target-info").textContent = `(to ${g.target})`;
  const scores = $("scores");
  scores.replaceChildren();
  const head = el("tr");
  const headers = [["", ""], ["score", "match points"], ["cards", "cards taken this hand"], ["coins", "coins taken"],
    ["7s", "sevens taken"], ["sb.", "settebello (the 7 of coins) taken"], ["scope", "scope this hand"]];
  const knocks = g.sides[0].knocks !== undefined;
  if (knocks) headers.push(["kn.", "knock points this hand"]);
  headers.forEach(([h, title]) => { const th = el("th", null, h); th.title = title; head.appendChild(th); });
  scores.appendChild(head);
  for (const s of g.sides) {
    const tr = el("tr", s.mine ? "mine" : "");
    tr.dataset.side = s.side;
    tr.appendChild(el("td", null, s.name));
    tr.appendChild(el("td", "big score", String(s.score)));
    const cells = [s.cards, s.coins, s.sevens, s.settebello ? "yes" : "no", s.scope];
    if (knocks) cells.push(s.knocks);
    cells.forEach((x) => tr.appendChild(el("td", null, String(x))));
    scores.appendChild(tr);
  }
  $("score-legend").textContent = "This hand so far: cards, coins, sevens (7s), settebello (sb.), scope" +
    (knocks ? ", knock points (kn.)." : ".") + (g.cirulla ? ` Cirulla to ${g.target}: napoli and grande are scored at the end of the hand.` : "");
  $("log").replaceChildren(...g.hand_log.map((m) => {
    const cls = m.type === "knock" ? "knock" : m.type === "table_take" ? "table-take" : m.scopa ? "scopa" : "";
    return el("li", cls, describeEvent(m));
  }));
  $("past").replaceChildren(...g.past_hands.map((h) => el("li", null,
    `hand ${h.hand}: ` + h.points.map((p, s) => `${sideName(g, s)} +${p.total}`).join(", ") + " → " + h.scores.join("–"))));
}

init().catch((e) => say(`cannot reach the server: ${e.message}`));
