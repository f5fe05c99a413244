// Scopa in a browser: a thin client. The server runs the rules; this page draws its JSON and sends whole moves
// ({card, capture}) and, in Cirulla, knock decisions ({knock}). No build step, no libraries. Every string on the
// page comes from STRINGS, in English or Italian (the toggle in the header, remembered in localStorage).
"use strict";

const state = {
  info: null, game: null, hint: null, pendingSummary: [], summary: null, lang: "en",
  status: () => "", frame: null, animating: false, showToken: 0, skip: null, skipAll: false,
  busy: false,  // a request to the server is on its way: no other move, knock or hint until its answer
  review: null,  // the review shown: {hand, job (the server's status), step}
};
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
const SVG_NS = "http://www.w3.org/2000/svg";
const LANG_KEY = "scopa.lang";

/** How long each move of the last request stays on the table before the next is drawn, in ms (`?anim=0`: none). */
const MOVE_MS = (() => {
  const v = Number(new URLSearchParams(location.search).get("anim"));
  return new URLSearchParams(location.search).has("anim") && Number.isFinite(v) && v >= 0 ? v : 1000;
})();
/** The person's own move is drawn for this share of MOVE_MS (they know what they played). */
const OWN_MOVE_SHARE = 0.6;

// ------------------------------------------------------------------------------------------------ words

/** One name and one corner letter per rank in each language, whatever the suits look like: in the 40-card deck the
 * record notation's Q is the 9, the Knight (Cavallo); only the 52-card deck (simple-8) has a Queen (Donna). English
 * letters are the notation's (A, 2..7, J, Q, K), Italian ones F, C, R (the terminal game uses the same names). */
const RANK_WORDS = {
  en: { names: { A: "Ace", J: "Jack", Q: "Knight", K: "King", T: "10" }, letters: { T: "10" },
        names52: { Q: "Queen" }, letters52: {} },
  it: { names: { A: "Asso", J: "Fante", Q: "Cavallo", K: "Re", T: "10" }, letters: { J: "F", Q: "C", K: "R", T: "10" },
        names52: { Q: "Donna" }, letters52: { Q: "D" } },
};
const SUIT_WORDS = {
  en: { italian: { d: "coins", c: "cups", s: "swords", b: "clubs" },
        french: { d: "diamonds", c: "hearts", s: "spades", b: "clubs" }, of: "of" },
  it: { italian: { d: "denari", c: "coppe", s: "spade", b: "bastoni" },
        french: { d: "quadri", c: "cuori", s: "picche", b: "fiori" }, of: "di" },
};

const STRINGS = {
  en: {
    variant: "Variant", opponents: "Opponents", partner: "Partner", cards: "Cards", italianSuits: "Italian suits",
    frenchSuits: "French suits", newGame: "New game", table: "Table", whichCapture: "Which capture?", back: "Back",
    yourHand: "Your hand", hint: "Hint", score: "Score", thisHand: "This hand", earlierHands: "Earlier hands",
    nextHand: "Next hand", seeResult: "See the result", rematch: "Rematch", language: "Language",
    knockPrompt: "Knock? Your three cards will be shown to everyone until you play them.",
    you: "you", partnerRole: "partner", opponentRole: "opponent", dealer: "dealer",
    intro: "Choose a variant and your opponents, then start a new game.",
    noServer: "cannot reach the server: {msg}",
    badAnswer: "bad answer from the server ({status})", failed: "request failed ({status})",
    newMatch: "New {variant} match against {opponent}.", rematchStarted: "Rematch! Good luck.",
    playTodo: "Click a card to play it.", knockTodo: "Your cards allow a knock: choose above your hand.",
    handBegins: "Hand {n} begins.", matchOver: "The match is over.",
    notYourTurn: "Wait: it is not your turn.",
    knockFirst: "First decide whether to knock (the buttons above your hand).",
    cannotPlay: "You cannot play {card} now.",
    chooserTitle: "{card} can capture in {n} ways — which?",
    optionTitle: "option {i}: take {cards}",
    suggestsKnock: "{bot} suggests: {choice}", suggestsTake: "{bot} suggests {card} taking {cards}",
    suggestsLay: "{bot} suggests {card}, laid on the table",
    noKnock: "{who}: no knock", knocked: "{who}: knock {how} (+{points}), showing {cards}",
    tableTake: "The table as dealt ({cards}) makes {total}: taken by {who} (the dealer's side) with {scope}",
    oneScopa: "a scopa", nScope: "{n} scope",
    takes: "{who}: {card} takes {cards}", lays: "{who}: {card} laid", scopaCry: " — SCOPA!",
    kind_fifteen: "fifteen", "kind_ace-takes-all": "ace takes all", kind_sum: "sum", kind_equal: "same rank",
    knock_none: "No knock", knock_sum: "Knock: 9 or less (3 points)", knock_tris: "Knock: three of a kind (10 points)",
    knockHow_sum: "by sum, 9 or less", knockHow_tris: "with three of a kind",
    handPoints: "Hand {n} points", leftover: "Cards left on the table ({cards}) go to {who}.",
    leftoverNobody: "Cards left on the table ({cards}) go to nobody.",
    youWin: "You win the match!", theyWin: "{who} won the match", finalScores: "Final scores: {scores}",
    stockInfo: "· hand {hand}, deal {deal}/{deals} · {stock} cards in the stock",
    emptyTable: "(the table is empty)", matchOverInfo: "· match over", knockInfo: "· your turn: knock or not?",
    playInfo: "· your turn: click a card", targetInfo: "(to {target})",
    col_score: "score", col_cards: "cards", col_coins: "coins", col_sevens: "7s", col_settebello: "sb.",
    col_scope: "scope", col_knocks: "kn.",
    tip_score: "match points", tip_cards: "cards taken this hand", tip_coins: "coins taken", tip_sevens: "sevens taken",
    tip_settebello: "settebello (the 7 of coins) taken", tip_scope: "scope this hand", tip_knocks: "knock points this hand",
    yes: "yes", no: "no",
    legend: "This hand so far: cards, coins, sevens (7s), settebello (sb.), scope", legendKnocks: ", knock points (kn.)",
    cirullaNote: " Cirulla to {target}: napoli and grande are scored at the end of the hand.",
    pastHand: "hand {n}: {points} → {scores}",
    shown: "shown", shownMine: " — shown to everyone (your knock)", cardTitle: "{card} ({code}), value {value}",
    field_carte: "cards", field_denari: "coins", field_settebello: "settebello", field_primiera: "primiera",
    field_scope: "scope", field_napoli: "napoli", field_grande: "grande", field_knocks: "knocks", field_total: "total",
    summaryScore: "score",
    reviewHand: "Review this hand", reviewMatch: "Review the match", close: "Close",
    reviewTitleHand: "Review of hand {n}", reviewTitleMatch: "Review of the match",
    reviewQueued: "Waiting for the server…", reviewStarting: "Reviewing your moves…", reviewing: "Reviewing your moves… {done} of {total}",
    reviewFailed: "The review failed: {msg}", reviewNone: "You made no move to review.",
    reviewSummary: "Your {n} moves lost {lost} points in all, {per} a move{marks}.",
    reviewHonest: "Each move is valued from what you knew then (the unseen cards dealt {worlds} times at random): the points your side makes from it to the end of the hand, minus the other side's; ± is the error of that estimate.",
    reviewStep: "Move {i} of {n} · hand {hand}", reviewForced: "Your only legal move.",
    reviewBest: "You played the best move.", reviewLoss: "{mark}{loss} points lost: the best was {best}{kind}.",
    reviewKind: " (mostly {kind})", reviewMoves: "Every legal move: its value",
    mark_blunder: "Blunder", mark_mistake: "Mistake", mark_inaccuracy: "Inaccuracy",
    marks_blunder: "blunders", marks_mistake: "mistakes", marks_inaccuracy: "inaccuracies",
    kind_cards: "cards", kind_coins: "coins", kind_settebello: "settebello", kind_primiera: "primiera",
    kind_scopa: "a scopa", kind_napoli: "napoli", kind_grande: "grande", kind_knocks: "knocks",
    tagPlayed: "played", tagBest: "best",
  },
  it: {
    variant: "Variante", opponents: "Avversari", partner: "Compagno", cards: "Carte", italianSuits: "Semi italiani",
    frenchSuits: "Semi francesi", newGame: "Nuova partita", table: "Tavolo", whichCapture: "Quale presa?",
    back: "Indietro", yourHand: "La tua mano", hint: "Consiglio", score: "Punteggio", thisHand: "Questa mano",
    earlierHands: "Mani precedenti", nextHand: "Mano successiva", seeResult: "Vedi il risultato", rematch: "Rivincita",
    language: "Lingua",
    knockPrompt: "Bussi? Le tue tre carte saranno mostrate a tutti finché non le giochi.",
    you: "tu", partnerRole: "compagno", opponentRole: "avversario", dealer: "mazziere",
    intro: "Scegli una variante e gli avversari, poi inizia una nuova partita.",
    noServer: "il server non risponde: {msg}",
    badAnswer: "risposta non valida dal server ({status})", failed: "richiesta non riuscita ({status})",
    newMatch: "Nuova partita a {variant} contro {opponent}.", rematchStarted: "Rivincita! Buona fortuna.",
    playTodo: "Clicca una carta per giocarla.", knockTodo: "Le tue carte ti permettono di bussare: scegli sopra la tua mano.",
    handBegins: "Inizia la mano {n}.", matchOver: "La partita è finita.",
    notYourTurn: "Aspetta: non tocca a te.",
    knockFirst: "Prima decidi se bussare (i pulsanti sopra la tua mano).",
    cannotPlay: "Ora non puoi giocare {card}.",
    chooserTitle: "{card} può prendere in {n} modi: quale scegli?",
    optionTitle: "scelta {i}: prendi {cards}",
    suggestsKnock: "{bot} consiglia: {choice}", suggestsTake: "{bot} consiglia {card} che prende {cards}",
    suggestsLay: "{bot} consiglia di calare {card}",
    noKnock: "{who}: non bussa", knocked: "{who}: bussa {how} (+{points}), mostrando {cards}",
    tableTake: "Il tavolo servito ({cards}) fa {total}: va alla parte del mazziere ({who}) con {scope}",
    oneScopa: "una scopa", nScope: "{n} scope",
    takes: "{who}: {card} prende {cards}", lays: "{who}: cala {card}", scopaCry: " — SCOPA!",
    kind_fifteen: "quindici", "kind_ace-takes-all": "asso piglia tutto", kind_sum: "somma", kind_equal: "stesso valore",
    knock_none: "Non busso", knock_sum: "Busso: 9 o meno (3 punti)", knock_tris: "Busso: tris (10 punti)",
    knockHow_sum: "per somma, 9 o meno", knockHow_tris: "con un tris",
    handPoints: "Punti della mano {n}",
    leftover: "Le carte rimaste in tavola ({cards}) vanno a chi ha preso per ultimo: {who}.",
    leftoverNobody: "Le carte rimaste in tavola ({cards}) non vanno a nessuno.",
    youWin: "Hai vinto la partita!", theyWin: "Partita vinta da {who}", finalScores: "Punteggi finali: {scores}",
    stockInfo: "· mano {hand}, giro {deal}/{deals} · {stock} carte nel mazzo",
    emptyTable: "(il tavolo è vuoto)", matchOverInfo: "· partita finita", knockInfo: "· tocca a te: bussi o no?",
    playInfo: "· tocca a te: scegli una carta", targetInfo: "(a {target})",
    col_score: "punti", col_cards: "carte", col_coins: "denari", col_sevens: "sette", col_settebello: "sb.",
    col_scope: "scope", col_knocks: "bus.",
    tip_score: "punti della partita", tip_cards: "carte prese in questa mano", tip_coins: "denari presi",
    tip_sevens: "sette presi", tip_settebello: "settebello (il 7 di denari) preso", tip_scope: "scope in questa mano",
    tip_knocks: "punti delle bussate in questa mano",
    yes: "sì", no: "no",
    legend: "Questa mano finora: carte, denari, sette, settebello (sb.), scope", legendKnocks: ", punti delle bussate (bus.)",
    cirullaNote: " Cirulla a {target}: napoli e grande si contano a fine mano.",
    pastHand: "mano {n}: {points} → {scores}",
    shown: "scoperta", shownMine: " — mostrata a tutti (hai bussato)", cardTitle: "{card} ({code}), valore {value}",
    field_carte: "carte", field_denari: "denari", field_settebello: "settebello", field_primiera: "primiera",
    field_scope: "scope", field_napoli: "napoli", field_grande: "grande", field_knocks: "bussate", field_total: "totale",
    summaryScore: "punteggio",
    reviewHand: "Analizza la mano", reviewMatch: "Analizza la partita", close: "Chiudi",
    reviewTitleHand: "Analisi della mano {n}", reviewTitleMatch: "Analisi della partita",
    reviewQueued: "In attesa del server…", reviewStarting: "Analisi delle tue mosse…", reviewing: "Analisi delle tue mosse… {done} di {total}",
    reviewFailed: "L'analisi non è riuscita: {msg}", reviewNone: "Non hai fatto mosse da analizzare.",
    reviewSummary: "Le tue {n} mosse hanno perso {lost} punti in tutto, {per} a mossa{marks}.",
    reviewHonest: "Ogni mossa è valutata da quello che sapevi allora (le carte che non vedevi distribuite {worlds} volte a caso): i punti che la tua parte fa da lì a fine mano, meno quelli dell'altra; ± è l'errore della stima.",
    reviewStep: "Mossa {i} di {n} · mano {hand}", reviewForced: "La tua unica mossa possibile.",
    reviewBest: "Hai giocato la mossa migliore.", reviewLoss: "{mark}{loss} punti persi: la migliore era {best}{kind}.",
    reviewKind: " (soprattutto {kind})", reviewMoves: "Ogni mossa possibile: il suo valore",
    mark_blunder: "Errore grave", mark_mistake: "Errore", mark_inaccuracy: "Imprecisione",
    marks_blunder: "errori gravi", marks_mistake: "errori", marks_inaccuracy: "imprecisioni",
    kind_cards: "carte", kind_coins: "denari", kind_settebello: "settebello", kind_primiera: "primiera",
    kind_scopa: "una scopa", kind_napoli: "napoli", kind_grande: "grande", kind_knocks: "bussate",
    tagPlayed: "giocata", tagBest: "migliore",
  },
};

/** Italian descriptions of the server's variants (the server describes them in English). */
const VARIANT_DESCRIPTIONS_IT = {
  classic: "Due giocatori, partita a 11.",
  "classic-15": "Due giocatori, partita a 15.",
  "classic-21": "Due giocatori, partita a 21.",
  "scopa-d-assi": "L'asso prende tutto il tavolo.",
  "scopa-a-quattro": "Quattro giocatori in due squadre, a 11.",
  "scopone-scientifico": "Quattro giocatori a squadre, dieci carte a testa, tavolo vuoto.",
  "simple-2": "Regole per principianti, 2 giocatori.",
  "simple-3": "Regole per principianti, 3 giocatori.",
  "simple-4": "Regole per principianti, 4 giocatori.",
  "simple-5": "Regole per principianti, 5 giocatori.",
  "simple-6": "Regole per principianti, 6 giocatori.",
  "simple-8": "Regole per principianti, 8 giocatori, 52 carte, partita a 16.",
  "simple-4-teams": "Regole per principianti, 4 giocatori in 2 squadre.",
  "simple-6-teams": "Regole per principianti, 6 giocatori in 3 squadre.",
  cirulla: "Cirulla: quindici, asso piglia tutto, bussate, napoli e grande, a 51.",
  "cirulla-3": "Cirulla per 3 giocatori, ognuno per sé, a 51.",
  "cirulla-4": "Cirulla per 4 giocatori in due squadre, a 51.",
};

/** The page's text for `key` in the current language, `{name}` filled from `params`. */
function t(key, params) {
  const s = STRINGS[state.lang][key] ?? STRINGS.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, k) => String((params || {})[k]));
}

function variantDescription(v) {
  return (state.lang === "it" && VARIANT_DESCRIPTIONS_IT[v.name]) || v.description;
}

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

function suitSvg(suit) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 40 40");
  svg.setAttribute("aria-hidden", "true");
  if (faces() === "french") {
    const [glyph, color] = FRENCH_SUITS[suit];
    const g = document.createElementNS(SVG_NS, "text");
    Object.entries({ x: 20, y: 34, "text-anchor": "middle", "font-size": 40, fill: color }).forEach(([k, v]) => g.setAttribute(k, v));
    g.textContent = glyph;
    svg.appendChild(g);
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

const deck52 = () => Boolean(state.game && state.game.deck === "french52");

/** The rank's letter in a card's corners, in the page's language. */
function rankLabel(rank) {
  const w = RANK_WORDS[state.lang];
  return (deck52() && w.letters52[rank]) || w.letters[rank] || rank;
}

/** The rank's one name in the page's language (Ace, 2, ..., Jack, Knight, King). */
function rankName(rank) {
  const w = RANK_WORDS[state.lang];
  return (deck52() && w.names52[rank]) || w.names[rank] || rank;
}

function cardText(card) {
  const w = SUIT_WORDS[state.lang];
  return `${rankName(card.rank)} ${w.of} ${w[faces()][card.suit]}`;
}
const captureText = (cards) => cards.map(cardText).join(", ");

function cardEl(card, small) {
  const c = el("div", `card s-${card.suit}` + (small ? " small" : ""));
  c.dataset.card = card.code;
  c.title = t("cardTitle", { card: cardText(card), code: card.code, value: card.value });
  c.setAttribute("aria-label", c.title);
  for (const pos of ["tl", "br"]) {
    const corner = el("div", `corner ${pos}`, rankLabel(card.rank));
    corner.appendChild(suitSvg(card.suit));
    c.appendChild(corner);
  }
  const pip = suitSvg(card.suit);
  pip.classList.add("pip");
  c.appendChild(pip);
  if (faces() === "italian" && "JQK".includes(card.rank)) c.appendChild(el("div", "face", rankName(card.rank)));
  return c;
}

// ------------------------------------------------------------------------------------------------ names

/** A seat's one name, the same in the seat boxes, the score table, the log and the summaries. */
function seatName(g, seat) { return seat === g.you ? t("you") : g.seats[seat].name; }
function sideName(g, side) { return g.sides[side].seats.map((s) => seatName(g, s)).join(" + "); }
/** The opponents' bot as the page names it (the hint's bot): "Bot" for the variant's own bot. */
function opponentsName(g) { return g.hint_bot || g.seats.find((s) => s.role === "opponent").bot; }

// ------------------------------------------------------------------------------------------------ API

/** A request that changes or asks about the game (a move, a knock, a hint, a new game): one at a time, so a
 * double click or a click while the answer is on its way sends nothing more. Returns undefined when one is already
 * on its way. */
async function send(method, path, body) {
  if (state.busy) return undefined;
  state.busy = true;
  document.body.classList.add("busy");
  try {
    return await api(method, path, body);
  } finally {
    state.busy = false;
    document.body.classList.remove("busy");
  }
}

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  const data = await res.json().catch(() => ({ error: t("badAnswer", { status: res.status }) }));
  if (!res.ok) throw new Error(data.error || t("failed", { status: res.status }));
  return data;
}

/** Show a status line; `text` is a string or a function giving it (redrawn in the other language on a switch). */
function say(text) {
  state.status = typeof text === "function" ? text : () => text || "";
  showStatus();
}

/** The status line: one line on the page, the whole text in its tooltip. */
function showStatus() {
  const m = $("message");
  m.textContent = state.status();
  m.title = m.textContent;
}

// ------------------------------------------------------------------------------------------------ language

function storedLang() {
  try {
    const l = localStorage.getItem(LANG_KEY);
    if (l && STRINGS[l]) return l;
  } catch (e) { /* storage disabled: fall back to the browser's language */ }
  return (navigator.language || "en").toLowerCase().startsWith("it") ? "it" : "en";
}

function setLang(lang) {
  state.lang = STRINGS[lang] ? lang : "en";
  try { localStorage.setItem(LANG_KEY, state.lang); } catch (e) { /* not remembered: still switched */ }
  document.documentElement.lang = state.lang;
  for (const b of document.querySelectorAll("#lang button")) b.setAttribute("aria-pressed", String(b.dataset.lang === state.lang));
  for (const e of document.querySelectorAll("[data-i18n]")) e.textContent = t(e.dataset.i18n);
  if (state.info) fillVariants();
  showStatus();
  if (state.game) render();
  if (state.summary) drawSummary(state.summary);
  if (state.review) drawReview();
}

// ------------------------------------------------------------------------------------------------ set-up

function variantInfo() { return state.info.variants.find((v) => v.name === $("variant").value); }

function fillVariants() {
  const sel = $("variant");
  const chosen = sel.value || "classic";
  sel.replaceChildren(...state.info.variants.map((v) => {
    const o = el("option", null, `${v.name} — ${variantDescription(v)}`);
    o.value = v.name;
    return o;
  }));
  sel.value = chosen;
}

function fillBots() {
  const v = variantInfo();
  for (const id of ["opponent", "partner"]) {
    const sel = $(id);
    sel.replaceChildren(...v.bots.map((b) => {
      const o = el("option", null, (v.short_names || {})[b] || b);  // "Bot": the variant's own bot
      o.value = b;
      o.title = b;
      return o;
    }));
    sel.value = v.default_bot;
  }
  $("partner-label").hidden = !v.teams;
}

async function init() {
  for (const b of document.querySelectorAll("#lang button")) b.addEventListener("click", () => setLang(b.dataset.lang));
  setLang(storedLang());
  document.body.style.setProperty("--move-ms", `${MOVE_MS}ms`);
  state.info = await api("GET", "/api/info");
  fillVariants();
  fillBots();
  $("variant").addEventListener("change", fillBots);
  $("setup").addEventListener("submit", (e) => { e.preventDefault(); newGame(); });
  $("faces").addEventListener("change", () => {
    document.body.classList.toggle("french", faces() === "french");
    if (state.game) render();
    if (state.summary) drawSummary(state.summary);
  });
  $("chooser-cancel").addEventListener("click", () => { $("chooser").hidden = true; });
  $("hint-button").addEventListener("click", getHint);
  $("next-hand").addEventListener("click", nextSummary);
  $("review-button").addEventListener("click", () => openReview(Number($("review-button").dataset.hand) || null));
  $("review-close").addEventListener("click", closeReview);
  $("review-prev").addEventListener("click", () => stepReview(-1));
  $("review-next").addEventListener("click", () => stepReview(1));
  $("rematch").addEventListener("click", rematch);
  // a click on the board while the last moves are being drawn skips to the end (and plays nothing)
  $("board").addEventListener("click", (e) => {
    if (!state.animating) return;
    e.stopPropagation();
    e.preventDefault();
    skipAnimation();
  }, true);
  say(() => t("intro"));
}

async function newGame() {
  const v = variantInfo();
  const body = { variant: v.name, opponent: $("opponent").value };
  if (v.deck === "french52") $("faces").value = "french";  // a 52-card deck: French faces fit it
  if (v.teams) body.partner = $("partner").value;
  try {
    const game = await send("POST", "/api/games", body);
    if (game) await show(game, () => t("newMatch", { variant: v.name, opponent: opponentsName(game) }));
  } catch (e) { say(e.message); }
}

async function rematch() {
  try {
    const game = await send("POST", `/api/games/${state.game.id}/rematch`, {});
    if (game) await show(game, () => t("rematchStarted"));
  } catch (e) { say(e.message); }
}

// ------------------------------------------------------------------------------------------------ playing

async function play(card, capture) {
  $("chooser").hidden = true;
  try {
    const game = await send("POST", `/api/games/${state.game.id}/move`, { card, capture });
    if (game) await show(game);
  } catch (e) { say(e.message); }
}

async function knock(choice) {
  try {
    const game = await send("POST", `/api/games/${state.game.id}/knock`, { knock: choice });
    if (game) await show(game);
  } catch (e) { say(e.message); }
}

function onHandClick(card, clicks) {
  if (state.animating) { skipAnimation(); return; }  // a key pressed while the last moves are drawn skips them
  // the answer to the move just sent is on its way, or this is a double click's second click: nothing more to send
  if (state.busy || clicks > 1) return;
  const g = state.game;
  const options = g.moves[card.code];
  if (!g.your_turn) { say(() => t("notYourTurn")); return; }
  if (g.knock_options.length) { say(() => t("knockFirst")); return; }
  if (!options) { say(() => t("cannotPlay", { card: cardText(card) })); return; }
  if (options.length === 1) { play(card.code, options[0]); return; }
  // several legal captures: let the player choose
  $("chooser-title").textContent = t("chooserTitle", { card: cardText(card), n: options.length });
  const box = $("capture-options");
  box.replaceChildren();
  const byCode = Object.fromEntries(g.table.map((c) => [c.code, c]));
  const kinds = (g.move_kinds || {})[card.code] || [];
  options.forEach((cap, i) => {
    const b = el("button", "capture-option");
    b.type = "button";
    b.dataset.capture = cap.join(" ");
    b.dataset.kind = kinds[i] || "";
    const kind = kinds[i] ? t(`kind_${kinds[i]}`) : "";
    b.title = t("optionTitle", { i: i + 1, cards: captureText(cap.map((code) => byCode[code])) }) + (kind ? ` (${kind})` : "");
    const row = el("div", "cards-row");
    cap.forEach((code) => row.appendChild(cardEl(byCode[code], true)));
    b.appendChild(row);
    if (g.cirulla && kind) b.appendChild(el("span", "capture-kind", kind));
    b.addEventListener("click", (ev) => { if (ev.detail <= 1) play(card.code, cap); });
    box.appendChild(b);
  });
  $("chooser").hidden = false;
}

async function getHint() {
  try {
    const game = state.game;
    const hint = await send("POST", `/api/games/${game.id}/hint`, {});
    if (hint && state.game === game) {
      state.hint = hint;
      render();
    }
  } catch (e) { say(e.message); }
}

function hintText(h) {
  if (h.knock) return t("suggestsKnock", { bot: h.bot, choice: t(`knock_${h.knock}`) });
  let text = h.capture.length
    ? t("suggestsTake", { bot: h.bot, card: cardText(h.card), cards: captureText(h.capture) })
    : t("suggestsLay", { bot: h.bot, card: cardText(h.card) });
  if (h.options.length) text += ` (${Math.round(100 * h.options[0].prob)}%)`;
  return text;
}

// ------------------------------------------------------------------------------------------------ review

/** Ask the server to review the person's moves of hand `hand` (null: the whole match, once over) and show its
 * progress, then the review: the server computes it in the background, the page asks again until it is done. */
async function openReview(hand) {
  const token = {};
  state.review = { hand, job: null, step: 0, token };
  $("review").hidden = false;
  drawReview();
  const body = hand ? { hand } : { match: true };
  const gameId = state.game.id;
  while (state.review && state.review.token === token) {
    let job;
    try {
      job = await api("POST", `/api/games/${gameId}/review`, body);
    } catch (e) {
      job = { state: "failed", error: e.message, done: 0, total: 0 };
    }
    if (!state.review || state.review.token !== token) return;
    state.review.job = job;
    drawReview();
    if (job.state === "done" || job.state === "failed") return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function closeReview() {
  state.review = null;
  $("review").hidden = true;
}

function stepReview(delta) {
  const r = state.review;
  if (!r || !r.job || !r.job.review) return;
  const n = r.job.review.decisions.length;
  r.step = Math.max(0, Math.min(n - 1, r.step + delta));
  drawReview();
}

/** A move of the review in a few characters: its card and what it takes, each as its rank and a small suit. */
function moveChip(code, capture) {
  const chip = el("span", "move-chip");
  const part = (c) => {
    const p = el("span", "chip-card", rankLabel(c.slice(0, -1)));
    p.appendChild(suitSvg(c.slice(-1)));
    return p;
  };
  chip.appendChild(part(code));
  if (capture.length) {
    chip.appendChild(el("span", "chip-takes", "×"));
    capture.forEach((c) => chip.appendChild(part(c)));
  }
  return chip;
}

const points = (x) => (x > 0 ? "+" : x < 0 ? "−" : "") + Math.abs(x).toFixed(2);

function drawReview() {
  const r = state.review;
  if (!r) return;
  $("review-title").textContent = r.hand ? t("reviewTitleHand", { n: r.hand }) : t("reviewTitleMatch");
  const job = r.job;
  const done = job && job.state === "done";
  $("review-body").hidden = !done;
  $("review-progress").hidden = done;
  if (!done) {
    $("review-bar").value = job && job.total ? job.done / job.total : 0;
    $("review-progress-text").textContent = !job || job.state === "queued" ? t("reviewQueued")
      : job.state === "failed" ? t("reviewFailed", { msg: job.error })
      : job.total ? t("reviewing", { done: job.done, total: job.total }) : t("reviewStarting");
    $("review-bar").hidden = Boolean(job && job.state === "failed");
    return;
  }
  const review = job.review;
  const decisions = review.decisions;
  const sum = review.summary;
  if (!decisions.length) {
    $("review-summary").textContent = t("reviewNone");
    for (const id of ["review-nav", "review-verdict", "review-table", "review-hand", "review-moves"]) $(id).replaceChildren();
    return;
  }
  const marks = Object.entries(sum.marks || {}).filter(([, n]) => n > 0).map(([m, n]) => `${n} ${t(`marks_${m}`)}`);
  $("review-summary").textContent = t("reviewSummary", {
    n: decisions.length, lost: sum.loss.toFixed(2), per: sum.loss_per_decision.toFixed(2),
    marks: marks.length ? ": " + marks.join(", ") : "",
  });
  $("review-legend").textContent = t("reviewHonest", { worlds: review.worlds });
  const d = decisions[r.step];
  $("review-step").textContent = t("reviewStep", { i: r.step + 1, n: decisions.length, hand: d.hand });
  $("review-prev").disabled = r.step === 0;
  $("review-next").disabled = r.step === decisions.length - 1;
  const best = d.moves.find((m) => m.move === d.best);
  const played = d.moves.find((m) => m.move === d.played);
  const verdict = $("review-verdict");
  verdict.dataset.mark = d.mark || "";
  verdict.replaceChildren();
  if (d.forced) verdict.textContent = t("reviewForced");
  else if (d.played === d.best || d.loss < 0.005) verdict.textContent = t("reviewBest");
  else {
    const text = t("reviewLoss", {
      mark: d.mark ? t(`mark_${d.mark}`) + ": " : "", loss: d.loss.toFixed(2), best: "{best}",
      kind: d.kind ? t("reviewKind", { kind: t(`kind_${d.kind}`) }) : "",
    });
    const [before, after] = text.split("{best}");
    verdict.append(before, moveChip(best.card, best.capture), after);
  }
  // the board as it was: the best move's cards highlighted, the card played marked
  const bestCards = new Set([best.card, ...best.capture]);
  const playedCards = new Set([played.card, ...played.capture]);
  const drawCards = (id, cards) => {
    $(id).replaceChildren(...(cards || []).map((c) => {
      const e = cardEl(c, true);
      if (bestCards.has(c.code)) e.classList.add("best");
      if (playedCards.has(c.code)) e.classList.add("was-played");
      return e;
    }));
  };
  drawCards("review-table", d.position && d.position.table);
  drawCards("review-hand", d.position && d.position.hand);
  // a bar per legal move, the best first
  const values = d.moves.map((m) => m.value);
  const lo = Math.min(...values, 0), hi = Math.max(...values, 0);
  const moves = [...d.moves].sort((a, b) => b.value - a.value);
  $("review-moves").replaceChildren(...moves.map((m) => {
    const li = el("li", "review-move" + (m.move === d.best ? " best" : "") + (m.move === d.played ? " was-played" : ""));
    li.dataset.move = m.move;
    li.appendChild(moveChip(m.card, m.capture));
    const track = el("span", "bar-track");
    const bar = el("span", "bar");
    const zero = hi > lo ? (0 - lo) / (hi - lo) : 0;
    const at = hi > lo ? (m.value - lo) / (hi - lo) : 0;
    bar.style.left = `${100 * Math.min(zero, at)}%`;
    bar.style.width = `${Math.max(1, 100 * Math.abs(at - zero))}%`;
    bar.classList.toggle("negative", m.value < 0);
    track.appendChild(bar);
    li.appendChild(track);
    const value = el("span", "bar-value", `${points(m.value)} ± ${m.se.toFixed(2)}`);
    const tags = [m.move === d.played ? t("tagPlayed") : "", m.move === d.best ? t("tagBest") : ""].filter(Boolean);
    if (tags.length) value.appendChild(el("span", "bar-tag", tags.join(", ")));
    li.appendChild(value);
    return li;
  }));
}

// ------------------------------------------------------------------------------------------------ drawing

const LOGGED = new Set(["move", "knock", "table_take"]);

/** Wait `ms`, or less when the person skips the drawing of the last moves. */
function pause(ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() { clearTimeout(timer); state.skip = null; resolve(); }
    state.skip = done;
  });
}

function skipAnimation() {
  state.skipAll = true;
  if (state.skip) state.skip();
}

/** Draw a view from the server: first each move of the request on the table it was played on (a bot's card shown
 * before its capture takes the cards), then the position now, then any hand or match summary. */
async function show(game, intro) {
  const token = ++state.showToken;
  state.game = game;
  state.hint = null;
  state.summary = null;
  state.skipAll = false;
  $("overlay").hidden = true;
  $("chooser").hidden = true;
  closeReview();
  $("game").hidden = false;
  state.pendingSummary = game.events.filter((e) => e.type === "hand_over" || e.type === "match_over");
  const frames = MOVE_MS > 0 ? game.events.filter((e) => e.type === "move" && e.table_before) : [];
  state.animating = frames.length > 0;
  for (const m of frames) {
    if (state.skipAll) break;
    state.frame = m;
    document.body.dataset.frames = String(Number(document.body.dataset.frames || 0) + 1);
    render();
    say(() => describeEvent(m, game));
    await pause(m.seat === game.you ? MOVE_MS * OWN_MOVE_SHARE : MOVE_MS);
    if (token !== state.showToken) return;
  }
  state.frame = null;
  state.animating = false;
  say(() => [intro ? intro() : "", statusText(game)].filter(Boolean).join(" "));
  render();
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  nextSummary();
}

/** The status line after a request: what happened in the hand being played (a new hand starts a new line). */
function statusText(g) {
  const ended = g.events.map((e) => e.type).lastIndexOf("hand_over");
  const now = g.events.slice(ended + 1).filter((e) => LOGGED.has(e.type)).map((e) => describeEvent(e, g));
  const parts = [];
  if (g.done) parts.push(t("matchOver"));
  else if (ended >= 0) parts.push(t("handBegins", { n: g.hand_no }));
  if (now.length) parts.push(now.join(" · "));
  else if (g.knock_options.length) parts.push(t("knockTodo"));
  else if (g.your_turn) parts.push(t("playTodo"));
  return parts.join(" ");
}

function describeEvent(m, g) {
  if (m.type === "knock") {
    const who = seatName(g, m.seat);
    if (m.kind === "none") return t("noKnock", { who });
    return t("knocked", { who, how: t(`knockHow_${m.kind}`), points: m.points, cards: captureText(m.cards) });
  }
  if (m.type === "table_take") {
    const scope = m.scope === 1 ? t("oneScopa") : t("nScope", { n: m.scope });
    return t("tableTake", { cards: captureText(m.cards), total: m.total, who: sideName(g, m.side), scope });
  }
  const who = seatName(g, m.seat);
  let text = m.capture.length
    ? t("takes", { who, card: cardText(m.card), cards: captureText(m.capture) })
    : t("lays", { who, card: cardText(m.card) });
  if (m.kind === "fifteen" || m.kind === "ace-takes-all") text += ` (${t(`kind_${m.kind}`)})`;
  if (m.scopa) text += t("scopaCry");
  return text;
}

function nextSummary() {
  const ev = state.pendingSummary.shift();
  state.summary = ev || null;
  if (!ev) { $("overlay").hidden = true; return; }
  drawSummary(ev);
  $("overlay").hidden = false;
}

function drawSummary(ev) {
  const g = state.game;
  const body = $("summary-body");
  body.replaceChildren();
  $("rematch").hidden = true;
  $("next-hand").hidden = false;
  const reviewButton = $("review-button");
  reviewButton.dataset.hand = ev.type === "hand_over" ? String(ev.hand) : "";
  reviewButton.textContent = ev.type === "hand_over" ? t("reviewHand") : t("reviewMatch");
  if (ev.type === "hand_over") {
    $("summary-title").textContent = t("handPoints", { n: ev.hand });
    if (ev.leftover.length) {
      const cards = captureText(ev.leftover);
      const text = ev.leftover_side >= 0 ? t("leftover", { cards, who: sideName(g, ev.leftover_side) }) : t("leftoverNobody", { cards });
      body.appendChild(el("p", null, text));
    }
    // a row per point field and a column per side: narrow enough for a phone
    const wrap = el("div", "scroll-x");
    const table = el("table");
    const head = el("tr");
    head.appendChild(el("th", null, ""));
    ev.points.forEach((_, s) => head.appendChild(el("th", "side-name", sideName(g, s))));
    table.appendChild(head);
    const row = (label, cls, field, cells) => {
      const tr = el("tr", cls);
      const th = el("th", "field", label);
      th.dataset.field = field;
      tr.appendChild(th);
      cells.forEach((x) => tr.appendChild(el("td", null, String(x))));
      table.appendChild(tr);
    };
    for (const f of Object.keys(ev.points[0])) row(t(`field_${f}`), f === "total" ? "total" : "", f, ev.points.map((p) => p[f]));
    row(t("summaryScore"), "hand-score", "score", ev.scores);
    wrap.appendChild(table);
    body.appendChild(wrap);
    const more = state.pendingSummary.some((e) => e.type === "match_over");
    $("next-hand").textContent = more ? t("seeResult") : t("nextHand");
  } else if (ev.type === "match_over") {
    const won = ev.winner === g.sides.findIndex((s) => s.mine);
    $("summary-title").textContent = won ? t("youWin") : t("theyWin", { who: sideName(g, ev.winner) });
    $("summary-title").dataset.result = won ? "win" : "loss";
    const scores = ev.scores.map((x, s) => `${sideName(g, s)} ${x}`).join(", ");
    body.appendChild(el("p", "final-scores", t("finalScores", { scores })));
    $("next-hand").hidden = true;
    $("rematch").hidden = false;
  }
}

function render() {
  const g = state.game;
  const frame = state.frame;
  document.body.classList.toggle("french", faces() === "french");
  document.body.classList.toggle("animating", state.animating);
  // other seats: card backs, never their faces (the server does not send them)
  const acting = frame ? frame.seat : g.done ? -1 : g.current;
  $("others").replaceChildren(...g.seats.filter((s) => s.seat !== g.you).map((s) => {
    const box = el("div", "seat" + (s.seat === acting ? " to-act" : ""));
    box.dataset.seat = s.seat;
    const title = el("div", "seat-title");
    title.appendChild(el("span", "seat-name", seatName(g, s.seat)));
    title.appendChild(el("span", "seat-role", t(s.role === "partner" ? "partnerRole" : "opponentRole")));
    if (s.seat === g.dealer) title.appendChild(el("span", "seat-dealer", t("dealer")));
    box.appendChild(title);
    const backs = el("div", "backs");
    // cards shown by a knock are public: face up (the server sends only those)
    for (const c of s.revealed || []) {
      const e = cardEl(c, true);
      e.classList.add("revealed");
      e.dataset.badge = t("shown");
      backs.appendChild(e);
    }
    for (let i = (s.revealed || []).length; i < s.cards_in_hand; i++) backs.appendChild(el("div", "back"));
    box.appendChild(backs);
    return box;
  }));
  $("stock-info").textContent = t("stockInfo", { hand: g.hand_no, deal: g.deal_no, deals: g.num_deals, stock: g.stock });
  const hint = state.hint;
  const hinted = hint && hint.card ? new Set([hint.card.code, ...hint.capture.map((c) => c.code)]) : new Set();
  $("hint").textContent = hint ? hintText(hint) : "";
  renderTable(g, frame, hinted);
  const mine = new Set((g.seats[g.you].revealed || []).map((c) => c.code));
  $("hand").style.setProperty("--n", String(g.hand.length));
  $("hand").replaceChildren(...g.hand.map((c) => {
    const e = cardEl(c);
    e.classList.add(g.moves[c.code] ? "playable" : "unplayable");
    if (mine.has(c.code)) {
      e.classList.add("revealed");
      e.dataset.badge = t("shown");
      e.title += t("shownMine");
    }
    if (hinted.has(c.code)) e.classList.add("hinted");
    e.tabIndex = 0;
    e.setAttribute("role", "button");
    e.addEventListener("click", (ev) => onHandClick(c, ev.detail));
    e.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onHandClick(c, 1); } });
    return e;
  }));
  const knocking = g.knock_options.length > 0;
  $("turn-info").textContent = g.done ? t("matchOverInfo") : knocking ? t("knockInfo") : g.your_turn ? t("playInfo") : "";
  $("knock").hidden = !knocking;
  $("knock-options").replaceChildren(...g.knock_options.map((k) => {
    const b = el("button", "knock-option" + (hint && hint.knock === k ? " hinted" : ""), t(`knock_${k}`));
    b.type = "button";
    b.dataset.knock = k;
    b.addEventListener("click", (ev) => { if (ev.detail <= 1) knock(k); });
    return b;
  }));
  $("hint-button").disabled = !g.your_turn;
  $("target-info").textContent = t("targetInfo", { target: g.target });
  renderScores(g);
  // while a move is drawn, the log stops at it (the moves after it come as they are drawn)
  let moves = g.hand_log;
  if (frame && !g.events.some((e) => e.type === "hand_over")) {
    moves = moves.slice(0, moves.length - g.events.slice(g.events.indexOf(frame) + 1).filter((e) => LOGGED.has(e.type)).length);
  }
  const log = $("log");
  log.replaceChildren(...moves.map((m) => {
    const cls = m.type === "knock" ? "knock" : m.type === "table_take" ? "table-take" : m.scopa ? "scopa" : "";
    return el("li", cls, describeEvent(m, g));
  }));
  log.scrollTop = log.scrollHeight;  // the newest move in view
  const past = $("past");
  past.replaceChildren(...g.past_hands.map((h) => el("li", null, t("pastHand", {
    n: h.hand,
    points: h.points.map((p, s) => `${sideName(g, s)} +${p.total}`).join(", "),
    scores: h.scores.join("–"),
  }))));
  past.scrollTop = past.scrollHeight;
}

/** The table: now, or while a move of the last request is drawn, the table it was played on with the card played
 * (marked with who played it) and the cards it takes. */
function renderTable(g, frame, hinted) {
  const table = $("table");
  table.style.setProperty("--n", String(frame ? frame.table_before.length + 1 : g.table.length));
  if (!frame) {
    table.replaceChildren(...g.table.map((c) => {
      const e = cardEl(c);
      if (hinted.has(c.code)) e.classList.add("hinted");
      return e;
    }));
    if (!g.table.length) table.appendChild(el("span", "empty", t("emptyTable")));
    return;
  }
  const taken = new Set(frame.capture.map((c) => c.code));
  const cards = frame.table_before.map((c) => {
    const e = cardEl(c);
    if (taken.has(c.code)) e.classList.add("taken");
    return e;
  });
  const played = cardEl(frame.card);
  played.classList.add("played", frame.seat === g.you ? "by-you" : "by-other");
  if (taken.size) played.classList.add("captures");
  played.dataset.who = seatName(g, frame.seat);
  played.dataset.seat = frame.seat;
  table.replaceChildren(...cards, played);
}

function renderScores(g) {
  const scores = $("scores");
  scores.replaceChildren();
  const knocks = g.sides[0].knocks !== undefined;
  const columns = ["score", "cards", "coins", "sevens", "settebello", "scope", ...(knocks ? ["knocks"] : [])];
  const head = el("tr");
  head.appendChild(el("th", null, ""));
  for (const c of columns) {
    const th = el("th", null, t(`col_${c}`));
    th.title = t(`tip_${c}`);
    th.dataset.column = c;
    head.appendChild(th);
  }
  scores.appendChild(head);
  for (const s of g.sides) {
    const tr = el("tr", s.mine ? "mine" : "");
    tr.dataset.side = s.side;
    const name = el("td", "side-name");
    name.appendChild(el("span", "side-label", sideName(g, s.side)));
    name.title = sideName(g, s.side);
    tr.appendChild(name);
    tr.appendChild(el("td", "big score", String(s.score)));
    const cells = [s.cards, s.coins, s.sevens, s.settebello ? t("yes") : t("no"), s.scope];
    if (knocks) cells.push(s.knocks);
    cells.forEach((x) => tr.appendChild(el("td", null, String(x))));
    scores.appendChild(tr);
  }
  $("score-legend").textContent = t("legend") + (knocks ? t("legendKnocks") : "") + "." +
    (g.cirulla ? t("cirullaNote", { target: g.target }) : "");
}

init().catch((e) => say(() => t("noServer", { msg: e.message })));
