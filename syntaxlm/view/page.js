// syntaxlm view: draws the four views of the page from the JSON document embedded in it
// (syntaxlm/view/data.py says what the document holds). Plain DOM and SVG, no libraries.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f"];
  const LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const RUN_NAMES = DATA.runs.map((run) => run.name);
  const SENTENCES = DATA.sentence_view;
  const state = { sentence: 0, suite: "", a: "", b: "", outcome: "all", item: null,
                  model: "", layer: 0, head: 0 };

  // --- small helpers -----------------------------------------------------------------------------

  function build(node, attrs, children) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child !== null && child !== undefined && child !== false) node.append(child);
    }
    return node;
  }
  function el(tag, attrs, ...children) { return build(document.createElement(tag), attrs, children); }
  function svg(tag, attrs, ...children) { return build(document.createElementNS(SVG_NS, tag), attrs, children); }

  // Numbers as the report writes them: 4 significant digits.
  function fmt(value, digits) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    return String(Number(value.toPrecision(digits || 4)));
  }
  function color(name) {
    const index = RUN_NAMES.indexOf(name);
    return COLORS[(index < 0 ? RUN_NAMES.length : index) % COLORS.length];
  }
  function textWidth(text, size) { return String(text).length * (size || 12) * 0.6; }
  function note(text) { return el("p", { class: "note", text: text }); }
  function legend(names) {
    return el("div", { class: "legend" }, names.map((name) =>
      el("span", {}, el("span", { class: "swatch", style: "background:" + color(name) }), name)));
  }
  function select(id, options, value, onchange) {
    return el("select", { id: id, onchange: (event) => onchange(event.target.value) },
      options.map(([key, label]) => el("option", { value: key, selected: key === value, text: label })));
  }

  // A table whose column headers sort its rows (numbers numerically, missing values last).
  function sortableTable(columns, rows, options) {
    options = options || {};
    let order = { column: -1, up: true };
    const head = el("tr", {}, columns.map((column, index) => el("th", {
      class: "sortable", title: "sort by " + column.name, text: column.name,
      onclick: () => {
        order = { column: index, up: order.column === index ? !order.up : true };
        draw();
      },
    })));
    const body = el("tbody");
    const table = el("table", { id: options.id || null, class: "sortable-table" }, el("thead", {}, head), body);
    function draw() {
      const sorted = rows.slice();
      if (order.column >= 0) {
        const key = columns[order.column].key;
        sorted.sort((x, y) => {
          const a = key(x), b = key(y);
          if (a === null || a === undefined) return 1;
          if (b === null || b === undefined) return -1;
          const c = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
          return order.up ? c : -c;
        });
      }
      Array.from(head.children).forEach((th, index) => {
        th.classList.toggle("sorted-up", index === order.column && order.up);
        th.classList.toggle("sorted-down", index === order.column && !order.up);
      });
      body.replaceChildren(...sorted.map((row) => {
        const tr = el("tr", { class: options.onclick ? "clickable" : null },
          columns.map((column) => el("td", { class: column.cls || null },
            column.cell ? column.cell(row) : fmt(column.key(row)))));
        if (options.onclick) tr.addEventListener("click", () => options.onclick(row, tr));
        if (options.selected && options.selected(row)) tr.classList.add("selected");
        return tr;
      }));
    }
    draw();
    return table;
  }

  // --- the comparison tables -----------------------------------------------------------------------

  function numberCell(cell) {
    if (!cell || cell.values.length === 0) return "";
    const n = cell.values.length;
    if (cell.values.every((v) => v === cell.values[0])) return fmt(cell.values[0]) + (n > 1 ? " (n=" + n + ")" : "");
    return fmt(cell.mean) + " ± " + fmt(cell.std, 2) + " (n=" + n + ")";
  }

  function renderComparison() {
    const root = document.getElementById("comparison");
    root.replaceChildren(el("p", { text:
      "Every number with how it was obtained: the method, the bound (what the number is relative to "
      + "the model's true value), the beam (action/word/fast-track) and the subset evaluated. Runs of "
      + "one model evaluated alike are averaged (mean ± sample std, n runs). Click a column to sort." }));
    if (DATA.tables.length === 0) root.append(note("No result files were found in the runs given."));
    for (const table of DATA.tables) {
      const columns = [{ name: "model", key: (row) => row.label }];
      for (const name of table.names) {
        columns.push({ name: name, cls: "number", key: (row) => row.numbers[name] ? row.numbers[name].mean : null,
                       cell: (row) => numberCell(row.numbers[name]) });
      }
      for (const [field, label] of [["method", "method"], ["bound", "bound"],
                                    ["beam", "beam (action/word/fast-track)"], ["subset", "subset"]]) {
        columns.push({ name: label, cls: "how", key: (row) => row.evaluation[field] });
      }
      root.append(el("h2", { text: table.title }),
                  sortableTable(columns, table.rows, { id: "table-" + table.kind }),
                  ...table.notes.map((line) => el("p", { class: "note", text: line })));
    }
    root.append(el("h2", { text: "Runs" }), el("ul", {}, DATA.runs.map((run) => el("li", {},
      el("span", { class: "swatch", style: "background:" + color(run.name) }), " ",
      el("b", { text: run.name }), ": " + run.path + (run.seed !== null && run.seed !== undefined ? ", seed " + run.seed : "")
      + (run.saved_model ? ", saved model " + run.saved_model : ", no saved model")))));
    // Which files' contents the page holds besides the result files, and which it would not read.
    const files = DATA.data_files || { embedded: [], refused: [] };
    const fileList = (id, entries) => el("ul", { id: id }, entries.map((f) => el("li", {},
      el("code", { text: f.path }), ": " + f.what + "; " + f.why)));
    root.append(el("h2", { text: "Data files" }), el("div", { id: "data-files" },
      files.embedded.length ? [el("p", { text: "Read into this page, besides the runs' result files:" }),
                               fileList("data-embedded", files.embedded)]
                            : note("No data file was read into this page besides the runs' result files."),
      files.refused.length ? [el("p", { text: "Refused (not read into this page):" }),
                              fileList("data-refused", files.refused)] : null));
  }

  // --- SyntaxGym -----------------------------------------------------------------------------------

  const SG_RUNS = RUN_NAMES.filter((name) => DATA.syntaxgym.some((suite) => name in suite.runs));
  const OUTCOMES = [["all", "all items"], ["a_not_b", "A passes, B fails"], ["b_not_a", "B passes, A fails"],
                    ["both", "both pass"], ["neither", "both fail"]];

  function passes(item, run) {
    const entry = item.runs[run];
    return entry ? Boolean(entry.results[0]) : null;
  }

  function keptItems() {
    const kept = [];
    for (const suite of DATA.syntaxgym) {
      if (state.suite && suite.suite !== state.suite) continue;
      for (const item of suite.items) {
        const a = passes(item, state.a), b = passes(item, state.b);
        const keep = state.outcome === "all"
          || (a !== null && b !== null && ((state.outcome === "a_not_b" && a && !b)
            || (state.outcome === "b_not_a" && b && !a) || (state.outcome === "both" && a && b)
            || (state.outcome === "neither" && !a && !b)));
        if (keep) kept.push({ suite: suite, item: item });
      }
    }
    return kept;
  }

  function renderSyntaxGym() {
    const root = document.getElementById("syntaxgym");
    if (DATA.syntaxgym.length === 0) {
      root.replaceChildren(note("No SyntaxGym results (eval sg --out) in the runs given."));
      return;
    }
    if (!state.a) { state.a = SG_RUNS[0]; state.b = SG_RUNS[Math.min(1, SG_RUNS.length - 1)]; }
    const accuracy = sortableTable(
      [{ name: "suite", key: (s) => s.suite }].concat(SG_RUNS.map((run) => ({
        name: run, cls: "number", key: (s) => (s.runs[run] ? s.runs[run].accuracy_pred0 : null),
        cell: (s) => (s.runs[run] ? fmt(s.runs[run].accuracy_pred0, 3) : "") }))),
      DATA.syntaxgym,
      { id: "sg-suites", onclick: (s) => { state.suite = state.suite === s.suite ? "" : s.suite; state.item = null; renderSyntaxGym(); },
        selected: (s) => s.suite === state.suite });
    const runOptions = SG_RUNS.map((run) => [run, run]);
    const controls = el("div", { class: "controls" },
      el("label", {}, "suite ", select("sg-suite", [["", "all suites"]].concat(DATA.syntaxgym.map((s) => [s.suite, s.suite])),
        state.suite, (v) => { state.suite = v; state.item = null; renderSyntaxGym(); })),
      el("label", {}, "model A ", select("sg-a", runOptions, state.a, (v) => { state.a = v; renderSyntaxGym(); })),
      el("label", {}, "model B ", select("sg-b", runOptions, state.b, (v) => { state.b = v; renderSyntaxGym(); })),
      el("label", {}, "items ", select("sg-outcome", OUTCOMES, state.outcome, (v) => { state.outcome = v; renderSyntaxGym(); })));
    const kept = keptItems();
    const items = sortableTable(
      [{ name: "suite", key: (k) => k.suite.suite }, { name: "item", cls: "number", key: (k) => k.item.item_number }]
        .concat(SG_RUNS.map((run) => ({ name: run, key: (k) => passes(k.item, run),
          cell: (k) => { const p = passes(k.item, run); return p === null ? "" : el("span", { class: p ? "pass" : "fail", text: p ? "pass" : "fail" }); } }))),
      kept,
      { id: "sg-items", onclick: (k) => { state.item = [k.suite.suite, k.item.item_number]; renderSyntaxGym(); },
        selected: (k) => state.item !== null && state.item[0] === k.suite.suite && state.item[1] === k.item.item_number });
    root.replaceChildren(
      el("p", { text: "Accuracy of each suite (prediction 0, the one the suite accuracy counts); click a suite to "
        + "see its items. The item filter compares two models item by item." }),
      el("h2", { text: "Suites" }), accuracy,
      el("h2", { text: "Items" }), controls,
      el("p", { id: "sg-count", text: kept.length + " item" + (kept.length === 1 ? "" : "s") + " ("
        + OUTCOMES.find((o) => o[0] === state.outcome)[1].replace("A", state.a).replace("B", state.b) + ")" }),
      el("div", { class: "columns" }, el("div", { style: "max-height:420px;overflow-y:auto" }, items), itemDetail()));
  }

  function itemDetail() {
    const box = el("div", { id: "sg-item-detail", class: "panel" });
    if (state.item === null) return build(box, {}, [el("p", { text: "Click an item to see its region surprisals." })]);
    const suite = DATA.syntaxgym.find((s) => s.suite === state.item[0]);
    const item = suite && suite.items.find((i) => i.item_number === state.item[1]);
    if (!item) return build(box, {}, [el("p", { text: "The item is not in the data." })]);
    const runs = SG_RUNS.filter((run) => item.runs[run]);
    let top = 0;
    for (const run of runs) {
      for (const values of Object.values(item.runs[run].region_surprisals_bits || {})) {
        for (const v of values) top = Math.max(top, v || 0);
      }
    }
    const rows = [];
    for (const condition of suite.conditions) {
      const regions = item.regions[condition] || [];
      rows.push(el("tr", {}, el("th", { text: condition }), el("td", { text: "text" }),
        suite.region_names.map((_, k) => el("td", { text: regions[k] || "" }))));
      for (const run of runs) {
        const values = (item.runs[run].region_surprisals_bits || {})[condition] || [];
        rows.push(el("tr", {}, el("td"), el("td", {}, el("span", { class: "swatch", style: "background:" + color(run) }), " " + run),
          suite.region_names.map((_, k) => {
            const v = values[k];
            const shade = top > 0 && v !== undefined ? 1 - 0.6 * (v / top) : 1;
            return el("td", { class: "number", style: "background:hsl(10,70%," + Math.round(40 + 60 * shade) + "%)",
                              text: v === undefined ? "" : fmt(v, 3) });
          })));
      }
    }
    return build(box, {}, [
      el("h3", { text: suite.suite + ", item " + item.item_number }),
      el("div", {}, suite.predictions.map((p, k) => el("div", { class: "formula", text: "prediction " + k + ": " + p }))),
      el("p", {}, runs.map((run) => el("span", { style: "margin-right:12px" }, run + ": ",
        item.runs[run].results.map((r, k) => el("span", { class: r ? "pass" : "fail", text: (k ? ", " : "") + (r ? "holds" : "fails") }))))),
      el("p", { text: "Region surprisals (bits), one row per model under each condition's text." }),
      el("table", { id: "sg-regions" }, el("tr", {}, el("th", { text: "condition" }), el("th", { text: "model" }),
        suite.region_names.map((name) => el("th", { text: name }))), rows),
    ]);
  }

  // --- sentences -----------------------------------------------------------------------------------

  function modelEntry(name) {
    let entry = SENTENCES.models[name];
    if (entry && entry.same_as) entry = SENTENCES.models[entry.same_as];
    return entry;
  }
  function sentenceModels() { return Object.keys(SENTENCES.models).filter((name) => modelEntry(name)); }

  function surprisalChart(words, models) {
    const values = models.map((name) => modelEntry(name).sentences[state.sentence].surprisal_bits);
    let top = 1;
    for (const row of values) for (const v of row) if (v !== null) top = Math.max(top, v);
    const height = 180, left = 40, base = 20 + height;
    const groups = words.map((word) => Math.max(textWidth(word) + 12, models.length * 9 + 10));
    const width = left + groups.reduce((a, b) => a + b, 0) + 10;
    const chart = svg("svg", { id: "surprisal-chart", width: width, height: base + 30, role: "img" });
    for (const tick of [0, top / 2, top]) {
      const y = base - (tick / top) * height;
      chart.append(svg("line", { x1: left - 4, x2: width, y1: y, y2: y, stroke: "#ddd" }),
                   svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", "font-size": 10, text: fmt(tick, 3) }));
    }
    chart.append(svg("text", { x: 10, y: 12, "font-size": 10, text: "bits" }));
    let x = left;
    words.forEach((word, i) => {
      const barWidth = (groups[i] - 8) / models.length;
      models.forEach((name, m) => {
        const v = values[m][i];
        if (v === null || v === undefined) return;
        const h = (v / top) * height;
        chart.append(svg("rect", { x: x + 4 + m * barWidth, y: base - h, width: Math.max(barWidth - 1, 1), height: h,
                                   fill: color(name) }, svg("title", { text: name + ", " + word + ": " + fmt(v) + " bits" })));
      });
      chart.append(svg("text", { x: x + groups[i] / 2, y: base + 16, "text-anchor": "middle", "font-size": 12, text: word }));
      x += groups[i];
    });
    return chart;
  }

  // A tree (["S", ["NP", "the", "dog"], "barks"]) drawn with its words at the bottom.
  function treeChart(tree, caption) {
    const leaves = [], nodes = [], edges = [];
    let depth = 0;
    function walk(node, level) {
      depth = Math.max(depth, level);
      if (typeof node === "string") {
        const record = { word: node, level: level, leaf: true, index: leaves.length };
        leaves.push(record);
        return record;
      }
      const record = { label: node[0], level: level, leaf: false, children: node.slice(1).map((c) => walk(c, level + 1)) };
      nodes.push(record);
      record.children.forEach((child) => edges.push([record, child]));
      return record;
    }
    const root = walk(tree, 0);
    let x = 10;
    for (const leaf of leaves) {
      const w = textWidth(leaf.word) + 14;
      leaf.x = x + w / 2;
      x += w;
    }
    function place(node) {
      if (node.leaf) return node.x;
      const xs = node.children.map(place);
      node.x = (xs[0] + xs[xs.length - 1]) / 2;
      return node.x;
    }
    place(root);
    const step = 34, top = 16;
    const y = (node) => top + (node.leaf ? depth : node.level) * step;
    const chart = svg("svg", { class: "tree", width: x + 10, height: top + depth * step + 14, role: "img" });
    for (const [parent, child] of edges) {
      chart.append(svg("line", { x1: parent.x, y1: y(parent) + 4, x2: child.x, y2: y(child) - 12, stroke: "#888" }));
    }
    for (const node of nodes) {
      chart.append(svg("text", { x: node.x, y: y(node), "text-anchor": "middle", "font-size": 12,
                                 "font-weight": 600, fill: "#33518a", text: node.label || "·" }));
    }
    for (const leaf of leaves) {
      chart.append(svg("text", { x: leaf.x, y: y(leaf), "text-anchor": "middle", "font-size": 12, text: leaf.word }));
    }
    return el("div", { class: "panel tree-panel" }, el("h3", { text: caption }), chart);
  }

  function distanceChart(words, distances, name) {
    const finite = distances.filter((v) => v !== null);
    const low = Math.min(0, ...finite), high = Math.max(...finite, low + 1e-9);
    const height = 110, base = 14 + height;
    const groups = words.map((word) => textWidth(word) + 14);
    const width = groups.reduce((a, b) => a + b, 0) + 20;
    const chart = svg("svg", { class: "distances", width: width, height: base + 26, role: "img" });
    let x = 10;
    words.forEach((word, i) => {
      const v = distances[i];
      if (v !== null && v !== undefined) {
        const h = ((v - low) / (high - low)) * height;
        chart.append(svg("rect", { x: x + 4, y: base - h, width: groups[i] - 8, height: Math.max(h, 1), fill: color(name) },
                         svg("title", { text: word + ": distance " + fmt(v) })));
      }
      chart.append(svg("text", { x: x + groups[i] / 2, y: base + 16, "text-anchor": "middle", "font-size": 12, text: word }));
      x += groups[i];
    });
    return el("div", { class: "panel" }, el("h3", { text: name + ": syntactic distances (the bar before each word splits the tree there)" }), chart);
  }

  function renderSentences() {
    const root = document.getElementById("sentences");
    const notes = SENTENCES.notes.map(note);
    if (SENTENCES.sentences.length === 0) {
      root.replaceChildren(...notes, note("No sentences to show."));
      return;
    }
    const list = el("ul", { id: "sentence-list", class: "sentence-list" }, SENTENCES.sentences.map((words, i) =>
      el("li", { class: i === state.sentence ? "selected" : null, "data-index": i, text: (i + 1) + ". " + words.join(" "),
                 onclick: () => { state.sentence = i; renderSentences(); renderAttention(); } })));
    const words = SENTENCES.sentences[state.sentence];
    const models = sentenceModels().filter((name) => modelEntry(name).sentences[state.sentence]);
    const trees = [];
    if (SENTENCES.gold[state.sentence]) trees.push(treeChart(SENTENCES.gold[state.sentence], "gold tree"));
    for (const name of models) {
      const entry = modelEntry(name), s = entry.sentences[state.sentence];
      if (s.parse) trees.push(treeChart(s.parse, name + ": best parse (" + entry.method + ")"));
      if (s.induced_tree) trees.push(treeChart(s.induced_tree, name + ": induced tree"));
    }
    const distances = models.filter((name) => modelEntry(name).sentences[state.sentence].distances)
      .map((name) => distanceChart(words, modelEntry(name).sentences[state.sentence].distances, name));
    const modelNotes = models.concat(sentenceModels().filter((n) => !models.includes(n)))
      .flatMap((name) => modelEntry(name).notes.map((text) => note(name + ": " + text)));
    root.replaceChildren(
      el("p", { text: "Sentences from " + SENTENCES.source + "; click one." }), ...notes, list,
      el("h2", { id: "sentence-title", text: words.join(" ") }),
      el("div", { class: "panel" }, el("h3", { text: "Per-word surprisal (bits)" }),
        legend(models.map((name) => name)),
        el("p", { class: "how", text: models.map((name) => name + ": " + modelEntry(name).method).join("; ") }),
        models.length ? surprisalChart(words, models) : note("No saved model scored this sentence.")),
      el("h2", { text: "Trees" }),
      el("div", { class: "columns", id: "trees" }, trees.length ? trees : [el("p", { text: "No trees for this sentence." })]),
      distances.length ? el("h2", { text: "Syntactic distances" }) : "", ...distances, ...modelNotes);
    const chosen = list.children[state.sentence];  // keep the chosen sentence in sight in its list
    list.scrollTop = chosen.offsetTop - list.offsetTop - (list.clientHeight - chosen.offsetHeight) / 2;
  }

  // --- masks and attention -------------------------------------------------------------------------

  // A matrix written one character per cell (view/data.py's attention_data) over the cells where
  // ``where(i, j)`` holds, row by row; the others are 0.
  function decode(text, size, levels, where) {
    const matrix = [];
    let k = 0;
    for (let i = 0; i < size; i++) {
      const row = new Array(size).fill(0);
      for (let j = 0; j < size; j++) if (where(i, j)) row[j] = LEVELS.indexOf(text[k++]) / levels;
      matrix.push(row);
    }
    return matrix;
  }

  // Cells shaded by the square root of their value, so that small probabilities stay visible;
  // a cell's title gives its value.
  function heatMap(tokens, matrix, title, tint) {
    const n = tokens.length;
    const cell = Math.max(6, Math.min(18, Math.floor(560 / Math.max(n, 1))));
    const font = Math.max(7, Math.min(11, cell - 1));
    const margin = Math.max(...tokens.map((t) => textWidth(t, font))) + 8;
    const size = margin + n * cell + 8;
    const chart = svg("svg", { class: "heatmap", width: size, height: size, role: "img" });
    tokens.forEach((token, i) => {
      chart.append(svg("text", { x: margin - 4, y: margin + i * cell + cell * 0.75, "text-anchor": "end", "font-size": font, text: token }),
                   svg("text", { x: 0, y: 0, "font-size": font, "text-anchor": "start",
                                 transform: "translate(" + (margin + i * cell + cell * 0.75) + "," + (margin - 4) + ") rotate(-90)", text: token }));
    });
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = matrix[i][j];
        chart.append(svg("rect", { x: margin + j * cell, y: margin + i * cell, width: cell, height: cell,
          fill: "rgb(" + tint.map((c) => Math.round(255 - (255 - c) * Math.sqrt(v))).join(",") + ")", stroke: "#f2f2f2", "stroke-width": 0.5 },
          svg("title", { text: tokens[i] + " → " + tokens[j] + ": " + fmt(v, 2) })));
      }
    }
    return el("div", { class: "panel" }, el("h3", { text: title }), chart);
  }

  function renderAttention() {
    const root = document.getElementById("attention");
    const names = sentenceModels().filter((name) =>
      modelEntry(name).sentences.some((s) => s && s.attention));
    if (names.length === 0) {
      root.replaceChildren(note("No model here records a structure mask and attention (TG, the TXL baselines, PLM-mask)."));
      return;
    }
    if (!names.includes(state.model)) state.model = names.find((name) => modelEntry(name).joint) || names[0];
    const entry = modelEntry(state.model);
    const s = entry.sentences[state.sentence];
    const attention = s && s.attention;
    const sentenceOptions = SENTENCES.sentences.map((words, i) => [String(i), (i + 1) + ". " + words.join(" ")]);
    const controls = el("div", { class: "controls" },
      el("label", {}, "sentence ", select("att-sentence", sentenceOptions, String(state.sentence),
        (v) => { state.sentence = Number(v); renderSentences(); renderAttention(); })),
      el("label", {}, "model ", select("att-model", names.map((n) => [n, n]), state.model,
        (v) => { state.model = v; renderAttention(); })));
    if (!attention) {
      root.replaceChildren(controls, note(state.model + " has no attention for this sentence."));
      return;
    }
    const layers = attention.weights.length, heads = attention.weights[0].length;
    state.layer = Math.min(state.layer, layers - 1);
    state.head = Math.min(state.head, heads - 1);
    const role = (h) => (attention.head_roles[String(h)] ? " (" + attention.head_roles[String(h)] + ")" : "");
    controls.append(
      el("label", {}, "layer ", select("att-layer", Array.from({ length: layers }, (_, l) => [String(l), String(l)]),
        String(state.layer), (v) => { state.layer = Number(v); renderAttention(); })),
      el("label", {}, "head ", select("att-head", Array.from({ length: heads }, (_, h) => [String(h), h + role(h)]),
        String(state.head), (v) => { state.head = Number(v); renderAttention(); })));
    const n = attention.tokens.length;
    const maskCells = attention.masks[attention.masks.length > 1 ? state.head : 0];
    const inCells = (i, j) => attention.cells === "all" || j <= i;
    const mask = decode(maskCells, n, 1, inCells);
    const weights = decode(attention.weights[state.layer][state.head], n, attention.levels,
      attention.weights_over === "masked" ? (i, j) => mask[i][j] > 0 : inCells);
    const over = attention.tree === "gold" ? "the gold tree" : attention.tree === "parse" ? "the model's best parse" : "the words";
    root.replaceChildren(
      el("p", { text: "What the model reads for the sentence (over " + over + "): the attention mask its structure makes "
        + "(dark: may attend) and the attention probabilities of one layer and head (rows: the position attending; "
        + "columns: the positions attended to; layers and heads from 0; shade: the square root of the probability, "
        + "hover a cell for its value)." }),
      controls,
      el("div", { class: "columns", id: "heatmaps" },
        heatMap(attention.tokens, mask, state.model + ": mask" + (attention.masks.length > 1 ? ", head " + state.head + role(state.head) : ""), [60, 60, 60]),
        heatMap(attention.tokens, weights, state.model + ": layer " + state.layer + ", head " + state.head + role(state.head), [33, 82, 160])));
  }

  // --- the page ------------------------------------------------------------------------------------

  document.getElementById("runs-line").textContent = DATA.runs.length + " run" + (DATA.runs.length === 1 ? "" : "s")
    + ": " + RUN_NAMES.join(", ") + ". Built " + DATA.created + " by syntaxlm " + DATA.syntaxlm + ".";
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      for (const other of document.querySelectorAll("#tabs button")) other.classList.toggle("selected", other === button);
      for (const view of document.querySelectorAll("main > section")) view.hidden = view.id !== button.dataset.view;
    });
  }
  renderComparison();
  renderSyntaxGym();
  renderSentences();
  renderAttention();
})();
