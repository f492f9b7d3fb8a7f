// syntaxlm view: draws the four views of the page from the JSON document embedded in it
// (syntaxlm/view/data.py says what the document holds). Plain DOM and SVG, no libraries.
// Every chart fits its panel: what is wider than the panel scrolls inside it, never the page.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f"];
  const LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const FONT = 'system-ui, "DejaVu Sans", sans-serif';  // as page.css gives svg text
  const RUN_NAMES = DATA.runs.map((run) => run.name);
  const SENTENCES = DATA.sentence_view;
  const state = { sentence: 0, suite: "", a: "", b: "", outcome: "all", item: null,
                  model: "", layer: 0, head: 0 };
  const SORTS = {};  // each sortable table's order, by table id: kept when the table is drawn again

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

  // A number with a fixed count of decimals ("24.90" beside "24.61"); "–" for a missing one.
  function fixed(value, decimals) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    return value.toFixed(decimals);
  }
  // The decimals that show a column's largest number with 4 significant digits (0 for counts).
  function decimalsFor(values) {
    const known = values.filter((v) => typeof v === "number" && Number.isFinite(v));
    if (known.every((v) => Number.isInteger(v))) return 0;
    const largest = Math.max(...known.map(Math.abs));
    return Math.max(0, Math.min(4, 3 - Math.floor(Math.log10(largest || 1))));
  }
  function color(name) {
    const index = RUN_NAMES.indexOf(name);
    return COLORS[(index < 0 ? RUN_NAMES.length : index) % COLORS.length];
  }
  const MEASURE = document.createElement("canvas").getContext("2d");
  function textWidth(text, size, weight) {
    MEASURE.font = (weight || "normal") + " " + (size || 12) + "px " + FONT;
    return MEASURE.measureText(String(text)).width;
  }
  // The width a view's content may take: that of the page's main area (a hidden view has none).
  function roomWidth() {
    const main = document.querySelector("main");
    const style = getComputedStyle(main);
    return main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  }
  function note(text) { return el("p", { class: "note", text: text }); }
  // One warning box: its first line, then the lines that start with "- " as a list.
  function noteBox(lines) {
    const items = lines.filter((line) => line.startsWith("- "));
    return el("div", { class: "note" }, lines.filter((line) => !line.startsWith("- ")).map((line) => el("p", { text: line })),
      items.length ? el("ul", {}, items.map((line) => el("li", { text: line.slice(2) }))) : null);
  }
  function scrolling(...children) { return el("div", { class: "scroll" }, ...children); }
  function legend(names) {
    return el("div", { class: "legend" }, names.map((name) =>
      el("span", {}, el("span", { class: "swatch", style: "background:" + color(name) }), name)));
  }
  function select(id, options, value, onchange) {
    return el("select", { id: id, onchange: (event) => onchange(event.target.value) },
      options.map(([key, label]) => el("option", { value: key, selected: key === value, text: label })));
  }

  // A table whose column headers sort its rows (numbers numerically, missing values last). Its
  // order outlives the table (SORTS); ``table.showSelection()`` marks the rows ``selected`` picks.
  function sortableTable(columns, rows, options) {
    const id = options.id;
    SORTS[id] = SORTS[id] || { column: -1, up: true };
    const head = el("tr", {}, columns.map((column, index) => el("th", {
      class: "sortable", title: "sort by " + (column.title || column.name),
      onclick: () => {
        const order = SORTS[id];
        SORTS[id] = { column: index, up: order.column === index ? !order.up : true };
        draw();
      },
    }, column.header || column.name)));
    const body = el("tbody");
    const table = el("table", { id: id, class: "sortable-table" }, el("thead", {}, head), body);
    const drawn = [];
    function draw() {
      const order = SORTS[id];
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
      drawn.length = 0;
      body.replaceChildren(...sorted.map((row) => {
        const tr = el("tr", { class: options.onclick ? "clickable" : null },
          columns.map((column) => el("td", { class: column.cls || null }, column.cell(row))));
        if (options.onclick) tr.addEventListener("click", () => options.onclick(row, tr));
        drawn.push([row, tr]);
        return tr;
      }));
      table.showSelection();
    }
    table.showSelection = () => {
      for (const [row, tr] of drawn) tr.classList.toggle("selected", Boolean(options.selected && options.selected(row)));
    };
    draw();
    return table;
  }

  // --- the comparison tables -----------------------------------------------------------------------

  function numberCell(cell, decimals) {
    if (!cell || cell.values.length === 0) return "";
    const n = cell.values.length;
    if (cell.values.every((v) => v === cell.values[0])) return fixed(cell.values[0], decimals) + (n > 1 ? " (n=" + n + ")" : "");
    return fixed(cell.mean, decimals) + " ± " + fixed(cell.std, decimals) + " (n=" + n + ")";
  }

  function comparisonTable(table) {
    const columns = [{ name: "model", key: (row) => row.label, cell: (row) => row.label }];
    for (const name of table.names) {
      const decimals = decimalsFor(table.rows.flatMap((row) => (row.numbers[name] ? row.numbers[name].values : [])));
      columns.push({ name: name, cls: "number", key: (row) => (row.numbers[name] ? row.numbers[name].mean : null),
                     cell: (row) => numberCell(row.numbers[name], decimals) });
    }
    for (const [field, label] of [["method", "method"], ["bound", "bound"],
                                  ["beam", "beam (action/word/fast-track)"], ["subset", "subset"]]) {
      columns.push({ name: label, cls: "how", key: (row) => row.evaluation[field], cell: (row) => row.evaluation[field] });
    }
    return [el("h2", { text: table.title }), scrolling(sortableTable(columns, table.rows, { id: "table-" + table.kind })),
            table.notes.length ? noteBox(table.notes) : null];
  }

  function renderComparison() {
    const root = document.getElementById("comparison");
    root.replaceChildren(el("p", { text:
      "Every number with how it was obtained: the method, the bound (what the number is relative to "
      + "the model's true value), the beam (action/word/fast-track) and the subset evaluated. Runs of "
      + "one model evaluated alike are averaged (mean ± sample std, n runs). Click a column to sort." }));
    if (DATA.tables.length === 0) root.append(note("The runs given hold no result files: only their saved models are shown."));
    for (const table of DATA.tables) build(root, {}, comparisonTable(table));
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

  // How a run scored its suites ("exact", "beam 100/10/5"): a beam is an approximation.
  function sgMethod(run) {
    const methods = new Set(DATA.syntaxgym.filter((s) => s.runs[run]).map((s) => s.runs[run].method));
    return Array.from(methods).join(", ");
  }
  function sgRunLabel(run) { return run + " (" + sgMethod(run) + ")"; }
  function isBeam(run) { return sgMethod(run).includes("beam"); }

  // The item filters: with one model, its outcome; with two or more, model A's against model B's.
  function outcomes() {
    if (SG_RUNS.length === 1) {
      return [["all", "all items"], ["a", state.a + " passes"], ["not_a", state.a + " fails"]];
    }
    return [["all", "all items"], ["a_not_b", state.a + " passes, " + state.b + " fails"],
            ["b_not_a", state.b + " passes, " + state.a + " fails"],
            ["both", state.a + " and " + state.b + " both pass"], ["neither", state.a + " and " + state.b + " both fail"]];
  }

  function passes(item, run) {
    const entry = item.runs[run];
    return entry ? Boolean(entry.results[0]) : null;
  }

  function keeps(item) {
    const a = passes(item, state.a), b = passes(item, state.b);
    switch (state.outcome) {
      case "all": return true;
      case "a": return a === true;
      case "not_a": return a === false;
      case "a_not_b": return a === true && b === false;
      case "b_not_a": return b === true && a === false;
      case "both": return a === true && b === true;
      case "neither": return a === false && b === false;
    }
    return true;
  }

  function keptItems() {
    const kept = [];
    for (const suite of DATA.syntaxgym) {
      if (state.suite && suite.suite !== state.suite) continue;
      for (const item of suite.items) if (keeps(item)) kept.push({ suite: suite, item: item });
    }
    return kept;
  }

  function runHeader(run) {
    return [run, el("div", { class: "method" + (isBeam(run) ? " beam" : ""), text: sgMethod(run) })];
  }

  function suiteTable(onSuite) {
    return sortableTable(
      [{ name: "suite", key: (s) => s.suite, cell: (s) => s.suite }].concat(SG_RUNS.map((run) => ({
        name: run, header: runHeader(run), title: sgRunLabel(run), cls: "number",
        key: (s) => (s.runs[run] ? s.runs[run].accuracy_pred0 : null),
        cell: (s) => (s.runs[run] ? fixed(s.runs[run].accuracy_pred0, 3) : "") }))),
      DATA.syntaxgym, { id: "sg-suites", onclick: (s) => onSuite(state.suite === s.suite ? "" : s.suite),
                        selected: (s) => s.suite === state.suite });
  }

  function itemTable(onItem) {
    const passCell = (run) => (k) => {
      const p = passes(k.item, run);
      return p === null ? "" : el("span", { class: p ? "pass" : "fail", text: p ? "pass" : "fail" });
    };
    return sortableTable(
      [{ name: "suite", key: (k) => k.suite.suite, cell: (k) => k.suite.suite },
       { name: "item", cls: "number", key: (k) => k.item.item_number, cell: (k) => String(k.item.item_number) }]
        .concat(SG_RUNS.map((run) => ({ name: run, header: runHeader(run), title: sgRunLabel(run),
                                        key: (k) => passes(k.item, run), cell: passCell(run) }))),
      keptItems(),
      { id: "sg-items", onclick: onItem,
        selected: (k) => state.item !== null && state.item[0] === k.suite.suite && state.item[1] === k.item.item_number });
  }

  // The view is drawn once; a click redraws only what it changes, so that the tables keep their
  // order and scroll, and the item chosen stays in sight with its detail beside it.
  function renderSyntaxGym() {
    const root = document.getElementById("syntaxgym");
    if (DATA.syntaxgym.length === 0) {
      root.replaceChildren(note("No SyntaxGym results (eval sg --out) in the runs given."));
      return;
    }
    state.a = SG_RUNS[0];
    state.b = SG_RUNS.length > 1 ? SG_RUNS[1] : "";
    const count = el("p", { id: "sg-count" });
    const itemBox = el("div", { class: "table-box", id: "sg-item-box" });
    const detail = el("div", { id: "sg-item-detail", class: "panel" });
    let items = null;
    function drawDetail() {
      detail.replaceChildren();
      build(detail, {}, itemDetail());  // as el() does: the parts itemDetail leaves out (null) skipped
    }
    function drawItems() {
      const scrolled = itemBox.scrollTop;
      items = itemTable((k) => {
        state.item = [k.suite.suite, k.item.item_number];
        items.showSelection();
        drawDetail();
        detail.scrollIntoView({ block: "nearest" });
      });
      itemBox.replaceChildren(items);
      itemBox.scrollTop = scrolled;
      const label = outcomes().find((o) => o[0] === state.outcome)[1];
      count.textContent = items.tBodies[0].rows.length + " item" + (items.tBodies[0].rows.length === 1 ? "" : "s")
        + " (" + label + ")";
    }
    const suites = suiteTable((suite) => chooseSuite(suite));
    const suiteSelect = select("sg-suite", [["", "all suites"]].concat(DATA.syntaxgym.map((s) => [s.suite, s.suite])),
                               state.suite, (v) => chooseSuite(v));
    function chooseSuite(suite) {
      state.suite = suite;
      state.item = null;
      suiteSelect.value = suite;
      suites.showSelection();
      drawItems();
      drawDetail();
    }
    const outcomeSelect = el("select", { id: "sg-outcome", onchange: (event) => { state.outcome = event.target.value; drawItems(); } });
    function drawOutcomes() {
      outcomeSelect.replaceChildren(...outcomes().map(([key, label]) =>
        el("option", { value: key, selected: key === state.outcome, text: label })));
    }
    const runOptions = SG_RUNS.map((run) => [run, sgRunLabel(run)]);
    const chooseRun = (which) => (v) => { state[which] = v; drawOutcomes(); drawItems(); };
    drawOutcomes();
    const controls = el("div", { class: "controls" },
      el("label", {}, "suite ", suiteSelect),
      el("label", {}, SG_RUNS.length > 1 ? "model A " : "model ", select("sg-a", runOptions, state.a, chooseRun("a"))),
      SG_RUNS.length > 1 ? el("label", {}, "model B ", select("sg-b", runOptions, state.b, chooseRun("b"))) : null,
      el("label", {}, "items ", outcomeSelect));
    const notes = DATA.syntaxgym.filter((s) => s.notes && s.notes.length)
      .map((s) => noteBox(["Suite " + s.suite + ": " + s.notes.join(" ")]));
    root.replaceChildren(
      el("p", { text: "Accuracy of each suite (prediction 0, the one the suite accuracy counts); click a suite to "
        + "see its items. Under each model, how it was scored: exact, or beam search (action/word/fast-track "
        + "beam), whose surprisals approximate the model's." }),
      ...notes,
      el("h2", { text: "Suites" }), el("div", { class: "table-box" }, suites),
      el("h2", { text: "Items" }), controls, count, itemBox, detail);
    drawItems();
    drawDetail();
  }

  // The regions (numbered from 1, as the formulas number them) the predictions compare.
  function criticalRegions(suite) {
    const used = new Set();
    for (const prediction of suite.predictions) {
      for (const match of prediction.matchAll(/\((\d+);/g)) used.add(Number(match[1]));
    }
    return used;
  }

  function regionHeader(suite, critical) {
    return suite.region_names.map((name, k) => el("th", { class: critical.has(k + 1) ? "critical" : null },
      el("span", { class: "region-number", text: "(" + (k + 1) + ")" }), name ? " " + name : ""));
  }

  // Surprisal cells shaded in the regions the predictions compare, relative to the highest there.
  function surprisalRow(suite, item, run, condition, critical, top) {
    const values = (item.runs[run].region_surprisals_bits || {})[condition] || [];
    return el("tr", {}, el("td"), el("td", {}, el("span", { class: "swatch", style: "background:" + color(run) }), " " + run),
      suite.region_names.map((_, k) => {
        const v = values[k];
        const shaded = critical.has(k + 1) && top > 0 && v !== undefined && v !== null;
        const style = shaded ? "background:hsl(10,70%," + Math.round(100 - 45 * (v / top)) + "%)" : null;
        return el("td", { class: "number" + (critical.has(k + 1) ? " critical" : ""), style: style,
                          text: v === undefined ? "" : fixed(v, 2) });
      }));
  }

  function itemDetail() {
    if (state.item === null) return [el("p", { text: "Click an item to see its region surprisals." })];
    const suite = DATA.syntaxgym.find((s) => s.suite === state.item[0]);
    const item = suite && suite.items.find((i) => i.item_number === state.item[1]);
    if (!item) return [el("p", { text: "The item is not in the data." })];
    const runs = SG_RUNS.filter((run) => item.runs[run]);
    const critical = criticalRegions(suite);
    let top = 0;
    for (const run of runs) {
      for (const values of Object.values(item.runs[run].region_surprisals_bits || {})) {
        values.forEach((v, k) => { if (critical.has(k + 1)) top = Math.max(top, v || 0); });
      }
    }
    const rows = [];
    for (const condition of suite.conditions) {
      const regions = item.regions[condition] || [];
      rows.push(el("tr", { class: "region-text" }, el("th", { text: condition }), el("td", { text: "text" }),
        suite.region_names.map((_, k) => el("td", { class: critical.has(k + 1) ? "critical" : null, text: regions[k] || "" }))));
      for (const run of runs) rows.push(surprisalRow(suite, item, run, condition, critical, top));
    }
    const named = Array.from(critical).sort((a, b) => a - b)
      .map((k) => k + (suite.region_names[k - 1] ? " (" + suite.region_names[k - 1] + ")" : ""));
    return [
      el("h3", { text: suite.suite + ", item " + item.item_number }),
      el("div", {}, suite.predictions.map((p, k) => el("div", { class: "formula", text: "prediction " + k + ": " + p }))),
      el("p", {}, runs.map((run) => el("span", { style: "margin-right:12px" }, sgRunLabel(run) + ": ",
        item.runs[run].results.map((r, k) => el("span", { class: r ? "pass" : "fail", text: (k ? ", " : "") + (r ? "holds" : "fails") }))))),
      suite.notes && suite.notes.length ? note(suite.notes.join(" ")) : null,
      el("p", { text: "Region surprisals (bits), one row per model under each condition's text; regions by number, "
        + "as the formulas name them" + (named.length ? ". Highlighted: the regions the predictions compare, "
        + named.join(", ") + ", shaded by surprisal." : ".") }),
      scrolling(el("table", { id: "sg-regions" },
        el("tr", {}, el("th", { text: "condition" }), el("th", { text: "model" }), regionHeader(suite, critical)), rows)),
    ];
  }

  // --- sentences -----------------------------------------------------------------------------------

  function modelEntry(name) {
    let entry = SENTENCES.models[name];
    if (entry && entry.same_as) entry = SENTENCES.models[entry.same_as];
    return entry;
  }
  function sentenceModels() { return Object.keys(SENTENCES.models).filter((name) => modelEntry(name)); }

  // Equal slots, one per word, as wide as the room allows between ``least`` and the widest word;
  // the words are written under their slots, turned when a word is wider than its slot.
  function wordAxis(words, least, room) {
    const widest = Math.max(...words.map((word) => textWidth(word)));
    const slot = Math.max(least, Math.min(room / Math.max(words.length, 1), widest + 10));
    const turned = widest + 4 > slot;
    const height = turned ? widest * Math.sin(Math.PI / 4) + 16 : 20;
    function draw(chart, left, base) {
      words.forEach((word, i) => {
        const x = left + (i + 0.5) * slot;
        chart.append(turned
          ? svg("text", { x: 0, y: 0, "text-anchor": "end", "font-size": 12, text: word,
                          transform: "translate(" + (x + 4) + "," + (base + 12) + ") rotate(-45)" })
          : svg("text", { x: x, y: base + 16, "text-anchor": "middle", "font-size": 12, text: word }));
      });
    }
    return { slot: slot, height: height, draw: draw };
  }

  // Round ticks (1, 2 or 5 times a power of ten apart) over ``low``..``high``: the axis runs from
  // the first to the last, and they are written with the decimals their step needs.
  function ticks(low, high) {
    const rough = (high - low) / 4;
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const step = [1, 2, 5, 10].map((k) => k * power).find((s) => s >= rough);
    const values = [];
    for (let v = Math.floor(low / step) * step; v < high + step - 1e-9; v += step) values.push(v);
    return { values: values, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) };
  }

  // A vertical axis at ``left`` with its ticks' lines across to ``right``; ``scale`` from a
  // value to its height above ``base``.
  function valueAxis(chart, left, right, base, axis, scale, unit) {
    for (const tick of axis.values) {
      const y = base - scale(tick);
      chart.append(svg("line", { x1: left - 4, x2: right, y1: y, y2: y, stroke: "#ddd" }),
                   svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", "font-size": 10,
                                 text: fixed(tick, axis.decimals) }));
    }
    const ends = axis.values.map(scale);
    chart.append(svg("line", { x1: left, x2: left, y1: base - Math.max(...ends), y2: base - Math.min(...ends), stroke: "#888" }),
                 svg("text", { x: 4, y: 12, "font-size": 10, text: unit }));
  }

  function surprisalChart(words, models) {
    const values = models.map((name) => modelEntry(name).sentences[state.sentence].surprisal_bits);
    let most = 1;
    for (const row of values) for (const v of row) if (v !== null) most = Math.max(most, v);
    const bits = ticks(0, most), top = bits.values[bits.values.length - 1];
    const height = 180, left = 44, base = 20 + height;
    const axis = wordAxis(words, models.length * 8 + 12, roomWidth() - left - 40);
    const width = left + axis.slot * words.length + 10;
    const chart = svg("svg", { id: "surprisal-chart", width: width, height: base + axis.height + 6, role: "img" });
    valueAxis(chart, left, width, base, bits, (v) => (v / top) * height, "bits");
    const bar = (axis.slot - 6) / models.length;
    words.forEach((word, i) => {
      models.forEach((name, m) => {
        const v = values[m][i];
        if (v === null || v === undefined) return;
        const h = (v / top) * height;
        chart.append(svg("rect", { x: left + i * axis.slot + 3 + m * bar, y: base - h, width: Math.max(bar - 1, 1), height: h,
                                   fill: color(name) }, svg("title", { text: name + ", " + word + ": " + fixed(v, 2) + " bits" })));
      });
    });
    axis.draw(chart, left, base);
    return scrolling(chart);
  }

  // A tree (["S", ["NP", "the", "dog"], "barks"]) with its words in a row at the bottom. A node's
  // edges go down to a bar under its label and from the bar straight down to each child, so no
  // edge crosses another or a label; each word's column is as wide as it and the labels above it
  // that span it alone.
  function treeChart(tree, caption) {
    const leaves = [], nodes = [];
    let depth = 0;
    function walk(node, level) {
      depth = Math.max(depth, level);
      if (typeof node === "string") {
        const leaf = { word: node, level: level, leaf: true, width: textWidth(node) };
        leaves.push(leaf);
        return leaf;
      }
      const record = { label: node[0] || "·", level: level, leaf: false, first: leaves.length };
      record.children = node.slice(1).map((child) => walk(child, level + 1));
      record.last = leaves.length - 1;
      nodes.push(record);
      return record;
    }
    const root = walk(tree, 0);
    for (const node of nodes) {
      if (node.first === node.last) {
        const leaf = leaves[node.first];
        leaf.width = Math.max(leaf.width, textWidth(node.label, 12, 600));
      }
    }
    let x = 10;
    for (const leaf of leaves) {
      leaf.x = x + (leaf.width + 14) / 2;
      x += leaf.width + 14;
    }
    function place(node) {
      if (node.leaf) return node.x;
      const xs = node.children.map(place);
      node.x = (xs[0] + xs[xs.length - 1]) / 2;
      return node.x;
    }
    place(root);
    const step = 32, top = 16;
    const y = (node) => top + (node.leaf ? depth : node.level) * step;
    const chart = svg("svg", { class: "tree", width: x + 10, height: top + depth * step + 8, role: "img" });
    const line = (x1, y1, x2, y2) => svg("line", { x1: x1, y1: y1, x2: x2, y2: y2, stroke: "#888" });
    for (const node of nodes) {
      const bar = y(node) + 8;
      const xs = node.children.map((child) => child.x);
      chart.append(line(node.x, y(node) + 4, node.x, bar), line(Math.min(...xs), bar, Math.max(...xs), bar),
                   ...node.children.map((child) => line(child.x, bar, child.x, y(child) - 13)));
    }
    for (const node of nodes) {
      chart.append(svg("text", { x: node.x, y: y(node), "text-anchor": "middle", "font-size": 12,
                                 "font-weight": 600, fill: "#33518a", text: node.label }));
    }
    for (const leaf of leaves) {
      chart.append(svg("text", { x: leaf.x, y: y(leaf), "text-anchor": "middle", "font-size": 12, text: leaf.word }));
    }
    return el("div", { class: "panel tree-panel" }, el("h3", { text: caption }), scrolling(chart));
  }

  // PRPN's distances: d_i, between word i and the one before it (the first: the start of the
  // sentence), drawn as a bar in the gap before word i, its value above it where it fits.
  function distanceChart(words, distances, name) {
    const finite = distances.filter((v) => v !== null && v !== undefined);
    const scale = ticks(Math.min(0, ...finite), Math.max(...finite, 1e-6));
    const low = scale.values[0], high = scale.values[scale.values.length - 1];
    const height = 110, left = 54, base = 24 + height;
    const axis = wordAxis(words, 32, roomWidth() - left - 60);
    const width = left + axis.slot * words.length + 10;
    const chart = svg("svg", { class: "distances", width: width, height: base + axis.height + 6, role: "img" });
    valueAxis(chart, left - 10, width, base, scale, (v) => ((v - low) / (high - low)) * height, "distance");
    const bar = Math.min(14, axis.slot / 2);
    words.forEach((word, i) => {
      const v = distances[i];
      if (v === null || v === undefined) return;
      const h = Math.max(((v - low) / (high - low)) * height, 1);
      const x = left + i * axis.slot;
      chart.append(svg("rect", { x: x - bar / 2, y: base - h, width: bar, height: h, fill: color(name) },
                       svg("title", { text: (i ? words[i - 1] : "(start)") + " | " + word + ": distance " + fixed(v, 2) })));
      if (textWidth(fixed(v, 2), 9) + 2 < axis.slot) {
        chart.append(svg("text", { x: x, y: base - h - 3, "text-anchor": "middle", "font-size": 9, text: fixed(v, 2) }));
      }
    });
    axis.draw(chart, left, base);
    return el("div", { class: "panel" },
      el("h3", { text: name + ": syntactic distances, each between a word and the one before it (the bar in the gap "
        + "between them); the tree splits first at the highest" }), scrolling(chart));
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
      el("div", { class: "panel", id: "surprisal-panel" }, el("h3", { text: "Per-word surprisal (bits)" }),
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

  // Cells shaded by the square root of their value, so that small probabilities stay visible; a
  // cell's title gives its value. The map takes ``room`` pixels where its cells can be 12 pixels or
  // more, and scrolls inside its panel where they cannot.
  function heatMap(tokens, matrix, title, tint, room) {
    const n = tokens.length;
    const longest = Math.max(...tokens.map((t) => textWidth(t, 11)));
    const cell = Math.max(12, Math.min(18, Math.floor((room - longest - 20) / Math.max(n, 1))));
    const font = cell >= 14 ? 11 : 10;
    const margin = Math.max(...tokens.map((t) => textWidth(t, font))) + 8;
    const size = margin + n * cell + 4;
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
          svg("title", { text: tokens[i] + " → " + tokens[j] + ": " + fixed(v, 2) })));
      }
    }
    return el("div", { class: "panel" }, el("h3", { text: title }), scrolling(chart));
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
    const room = (roomWidth() - 18) / 2 - 24;  // half the width, less the gap and a panel's padding
    root.replaceChildren(
      el("p", { text: "What the model reads for the sentence (over " + over + "): the attention mask its structure makes "
        + "(dark: may attend) and the attention probabilities of one layer and head (rows: the position attending; "
        + "columns: the positions attended to; layers and heads from 0; shade: the square root of the probability, "
        + "hover a cell for its value)." }),
      controls,
      el("div", { class: "pair", id: "heatmaps" },
        heatMap(attention.tokens, mask, state.model + ": mask" + (attention.masks.length > 1 ? ", head " + state.head + role(state.head) : ""), [60, 60, 60], room),
        heatMap(attention.tokens, weights, state.model + ": layer " + state.layer + ", head " + state.head + role(state.head), [33, 82, 160], room)));
  }

  // --- the page ------------------------------------------------------------------------------------

  document.getElementById("runs-line").textContent = DATA.runs.length + " run" + (DATA.runs.length === 1 ? "" : "s")
    + ": " + RUN_NAMES.join(", ") + ". Built " + DATA.created + " by syntaxlm " + DATA.syntaxlm + ".";
  const scrolled = {};  // each view's place on the page, found again when it is shown again
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      const shown = document.querySelector("main > section:not([hidden])");
      if (shown) scrolled[shown.id] = window.scrollY;
      for (const other of document.querySelectorAll("#tabs button")) other.classList.toggle("selected", other === button);
      for (const view of document.querySelectorAll("main > section")) view.hidden = view.id !== button.dataset.view;
      window.scrollTo(window.scrollX, scrolled[button.dataset.view] || 0);
    });
  }
  let resized = null;  // the charts sized to the window are drawn again when it changes width
  let width = window.innerWidth;
  window.addEventListener("resize", () => {
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    clearTimeout(resized);
    resized = setTimeout(() => { renderSentences(); renderAttention(); }, 150);
  });
  renderComparison();
  renderSyntaxGym();
  renderSentences();
  renderAttention();
})();
