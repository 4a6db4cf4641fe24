"use strict";
// Filters the problem tiles and builds a clicked problem's panel from the JSON data island. Every string that
// came from the run is put in the page with textContent (never innerHTML), so it stays text.
(() => {
  const island = document.getElementById("humaneval-data");
  let parsed = null;
  const data = () => parsed || (parsed = JSON.parse(island.textContent));
  const grid = document.getElementById("grid");
  const panel = document.getElementById("panel");
  const shownCount = document.getElementById("shown");
  const tiles = Array.from(grid.querySelectorAll(".tile"));
  const tileOf = new Map(tiles.map((tile) => [tile.dataset.task, tile]));
  const state = { status: "", change: "", query: "", task: null };
  const OMITTED = "(left out of this page to keep it small: a passing sample beyond the first " +
    "PASSED_KEPT of its problem, or the page's size budget was spent; the results JSONL has it)";
  const CODE_LINES_NUMBERED = 5000;

  // Invisible characters that change how the text around them reads (bidi overrides and isolates, zero-width
  // characters, line and paragraph separators): shown as escapes, so code reads as it runs.
  const UNSEEN = /[\p{Cf}\p{Zl}\p{Zp}]/gu;
  const visible = (text) => String(text).replace(UNSEEN, (c) => "\\u" + c.codePointAt(0).toString(16).padStart(4, "0"));

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }

  function omittedNote() {
    return el("p", "note", OMITTED.replace("PASSED_KEPT", String(data().passed_texts_kept)));
  }

  // A text reference: null when there is no such text, undefined when it was left out of the page.
  function textOf(ref) {
    if (ref === null || ref === undefined) return null;
    return ref < 0 ? undefined : data().texts[ref];
  }

  function codeBlock(value, mark, first) {
    const pre = el("pre", "code");
    const lines = value.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    if (lines.length > CODE_LINES_NUMBERED) {
      pre.className = "plain";
      pre.textContent = visible(value);
      return pre;
    }
    const start = first || 1;
    lines.forEach((line, i) => {
      const span = el("span", start + i === mark ? "line hl" : "line", line);
      span.dataset.n = String(start + i);
      pre.appendChild(span);
    });
    return pre;
  }

  function plainBlock(value) {
    return el("pre", "plain", value);
  }

  // "(at completion line 3: ...)" in a detail: where the decisive line is.
  function locate(detail) {
    const match = /\(at (prompt|completion|test) line (\d+):/.exec(detail || "");
    return match ? { part: match[1], line: Number(match[2]) } : null;
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "";
    return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms.toFixed(1) + " ms";
  }

  function badge(status) {
    return el("span", "status s-" + status, status);
  }

  function fact(list, name, value) {
    list.append(el("dt", null, name), el("dd", null, value));
  }

  function sampleBody(row, problem) {
    const [index, statusIndex, duration, detailRef, completionRef, extra] = row;
    const body = el("div", "body");
    const detail = textOf(detailRef) || "";
    const facts = el("dl");
    fact(facts, "sample", index);
    fact(facts, "status", data().statuses[statusIndex]);
    if (duration !== null && duration !== undefined) fact(facts, "duration", fmtMs(duration));
    if (detail) fact(facts, "detail", detail);
    const texts = (extra && extra.t) || {};
    for (const [name, value] of Object.entries((extra && extra.f) || {})) fact(facts, name.replace(/_/g, " "), value);
    for (const [name, ref] of Object.entries(texts)) {
      if (["raw", "stdout", "stderr", "traceback"].includes(name)) continue;
      const value = textOf(ref);
      fact(facts, name.replace(/_/g, " "), value === undefined ? "(left out of this page)" : value);
    }
    body.appendChild(facts);
    const where = locate(detail);
    if (where && where.part !== "completion") {
      const source = textOf(problem && problem[where.part]);
      if (source) {
        const lines = source.split("\n");
        const first = Math.max(1, where.line - 3);
        body.append(el("h3", null, "decisive line: " + where.part + " line " + where.line),
          codeBlock(lines.slice(first - 1, where.line + 2).join("\n"), where.line, first));
      }
    }
    body.appendChild(el("h3", null, "completion"));
    const completion = textOf(completionRef);
    if (completion === undefined) body.appendChild(omittedNote());
    else if (completion === null) body.appendChild(el("p", "note", "(no completion)"));
    else if (completion === "") body.appendChild(el("p", "note", "(empty completion)"));
    else {
      const block = codeBlock(completion, where && where.part === "completion" ? where.line : 0);
      block.dataset.part = "completion";
      body.appendChild(block);
    }
    const titles = { raw: "raw model answer", stdout: "stdout", stderr: "stderr", traceback: "traceback" };
    for (const name of ["raw", "stdout", "stderr", "traceback"]) {
      if (!(name in texts)) continue;
      const value = textOf(texts[name]);
      body.appendChild(el("h3", null, titles[name]));
      body.appendChild(value === undefined ? omittedNote() : plainBlock(value));
    }
    return body;
  }

  function sampleRow(row, problem, open) {
    const status = data().statuses[row[1]];
    const item = el("details", "sample");
    item.dataset.sample = String(row[0]);
    item.dataset.status = status;
    const summary = el("summary");
    const detail = textOf(row[3]) || "";
    summary.append(el("span", "idx", "#" + row[0]), badge(status), el("span", "dur", fmtMs(row[2])),
      el("span", "brief", detail.split("\n")[0]));
    item.appendChild(summary);
    const build = () => {
      if (!item.querySelector(".body")) item.appendChild(sampleBody(row, problem));
    };
    item.addEventListener("toggle", () => { if (item.open) build(); });
    if (open) {
      build();
      item.open = true;
    }
    return item;
  }

  function baselineLine(task) {
    const baseline = data().baseline;
    if (!baseline) return null;
    const tile = tileOf.get(task);
    const entry = baseline[task];
    if (!entry) return el("p", "baseline-line", "baseline: this problem is not in the baseline report");
    const statuses = Object.entries(entry.statuses || {}).map(([s, n]) => s + " " + n).join(", ");
    const change = tile && tile.dataset.change ? " · " + tile.dataset.change : "";
    return el("p", "baseline-line",
      "baseline: " + entry.c + "/" + entry.n + " passed (" + statuses + ")" + change);
  }

  function openProblem(task) {
    const problem = data().problems[task];
    state.task = task;
    for (const tile of tiles) tile.classList.toggle("current", tile.dataset.task === task);
    panel.replaceChildren();
    panel.dataset.task = task;
    panel.appendChild(el("h2", null, task));
    const samples = problem ? problem.samples : [];
    const counts = {};
    for (const row of samples) {
      const status = data().statuses[row[1]];
      counts[status] = (counts[status] || 0) + 1;
    }
    const passed = counts.passed || 0;
    panel.appendChild(el("p", "summary-line", passed + "/" + samples.length + " samples passed · " +
      Object.entries(counts).map(([s, n]) => s + " " + n).join(", ")));
    const baseline = baselineLine(task);
    if (baseline) panel.appendChild(baseline);
    panel.appendChild(el("h3", null, "prompt"));
    const prompt = problem ? textOf(problem.prompt) : null;
    // An empty prompt: a standard-input or functional problem, whose samples are whole programs.
    if (prompt === "") panel.appendChild(el("p", "note", "(none: each sample is a whole program)"));
    else if (typeof prompt === "string") panel.appendChild(codeBlock(prompt, 0));
    else panel.appendChild(el("p", "note", data().prompts ? "(prompt left out of this page)" :
      "(no prompt: this page was built without the dataset; python -m pytest_humaneval html --dataset adds it)"));
    const test = problem ? textOf(problem.test) : null;
    if (typeof test === "string") {
      const more = el("details");
      more.append(el("summary", null, "test"), codeBlock(test, 0));
      panel.appendChild(more);
    }
    const shown = samples.filter((row) => !state.status || data().statuses[row[1]] === state.status);
    panel.appendChild(el("h3", "shown-samples", shown.length === samples.length ? samples.length + (samples.length === 1 ? " sample" : " samples") :
      "showing " + shown.length + " of " + samples.length + " samples (filter: " + state.status + ")"));
    const list = el("div", "samples");
    const firstFailing = shown.findIndex((row) => data().statuses[row[1]] !== "passed");
    shown.forEach((row, i) => list.appendChild(sampleRow(row, problem, i === (firstFailing >= 0 ? firstFailing : 0))));
    panel.appendChild(list);
  }

  function applyFilters() {
    let shown = 0;
    for (const tile of tiles) {
      const match = (!state.status || tile.dataset.statuses.split(" ").includes(state.status)) &&
        (!state.change || tile.dataset.change === state.change) &&
        (!state.query || tile.dataset.task.toLowerCase().includes(state.query));
      tile.hidden = !match;
      if (match) shown += 1;
    }
    shownCount.textContent = shown + " of " + tiles.length + " problems";
    if (state.task) openProblem(state.task);
  }

  for (const button of document.querySelectorAll(".filter")) {
    button.addEventListener("click", () => {
      for (const other of document.querySelectorAll(".filter")) other.setAttribute("aria-pressed", String(other === button));
      state.status = button.dataset.status;
      applyFilters();
    });
  }
  document.getElementById("search").addEventListener("input", (event) => {
    state.query = event.target.value.trim().toLowerCase();
    applyFilters();
  });
  const changeFilter = document.getElementById("change-filter");
  if (changeFilter) changeFilter.addEventListener("change", () => { state.change = changeFilter.value; applyFilters(); });
  const colourBy = document.getElementById("colour-by");
  if (colourBy) colourBy.addEventListener("change", () => grid.classList.toggle("by-change", colourBy.value === "change"));
  grid.addEventListener("click", (event) => {
    const tile = event.target.closest(".tile");
    if (!tile) return;
    history.replaceState(null, "", "#" + tile.dataset.task);
    openProblem(tile.dataset.task);
  });
  const fromHash = () => {
    const task = decodeURIComponent(location.hash.slice(1));
    if (tileOf.has(task)) openProblem(task);
  };
  window.addEventListener("hashchange", fromHash);
  fromHash();
  applyFilters();
  document.body.dataset.ready = "1";
})();
