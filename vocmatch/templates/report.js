"use strict";
// The image table and overlays of a vocmatch HTML report. Everything taken from the
// annotation files is set with textContent or setAttribute, never parsed as markup.
(function () {
  // The SVG namespace, read from the page's own inline SVG rather than spelled out.
  var SVG = document.querySelector(".key-legend svg").namespaceURI;
  var PAGE_SIZE = 50;
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var classes = data.classes;
  var outcomes = data.outcomes;
  var images = data.images;
  var state = {
    sort: "rank", descending: false, cls: -1, hasFn: false, hasFp: false, text: "",
    page: 0, order: [], open: -1
  };
  var perClass = null;

  function byId(id) { return document.getElementById(id); }

  function element(tag, text) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function svgElement(tag, attributes) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attributes).forEach(function (name) {
      node.setAttribute(name, String(attributes[name]));
    });
    return node;
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "—" : value.toFixed(digits);
  }

  // Per image: the classes it holds, and those with an FN or an FP (built on first use).
  function classSets() {
    if (perClass !== null) { return perClass; }
    perClass = images.map(function (image) {
      var any = new Set(), fn = new Set(), fp = new Set();
      image.g.forEach(function (box) {
        any.add(box[0]);
        if (outcomes[box[5]] === "fn") { fn.add(box[0]); }
      });
      image.p.forEach(function (box) {
        any.add(box[0]);
        if (outcomes[box[5]] === "fp") { fp.add(box[0]); }
      });
      return { any: any, fn: fn, fp: fp };
    });
    return perClass;
  }

  function keep(index) {
    var image = images[index];
    if (state.text && image.key.toLowerCase().indexOf(state.text) < 0) { return false; }
    if (state.cls < 0) {
      return (!state.hasFn || image.fn > 0) && (!state.hasFp || image.fp > 0);
    }
    var sets = classSets()[index];
    if (!sets.any.has(state.cls)) { return false; }
    return (!state.hasFn || sets.fn.has(state.cls)) && (!state.hasFp || sets.fp.has(state.cls));
  }

  function sortValue(index) {
    var image = images[index];
    if (state.sort === "rank") { return index; }
    return image[state.sort];
  }

  function compare(a, b) {
    var x = sortValue(a), y = sortValue(b), result = 0;
    if (x === null && y !== null) { return 1; }   // no value: last either way
    if (y === null && x !== null) { return -1; }
    if (x < y) { result = -1; } else if (x > y) { result = 1; }
    if (state.descending) { result = -result; }
    return result !== 0 ? result : a - b;          // ties keep the worst-first order
  }

  function refresh() {
    var order = [];
    for (var i = 0; i < images.length; i += 1) {
      if (keep(i)) { order.push(i); }
    }
    order.sort(compare);
    state.order = order;
    var pages = Math.max(1, Math.ceil(order.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    byId("filter-count").textContent =
      order.length.toLocaleString("en") + " of " + images.length.toLocaleString("en") + " images";
    renderPage();
  }

  function renderPage() {
    var body = document.querySelector("#image-table tbody");
    var rows = document.createDocumentFragment();
    var start = state.page * PAGE_SIZE;
    var shown = state.order.slice(start, start + PAGE_SIZE);
    shown.forEach(function (index) {
      var image = images[index];
      var row = element("tr");
      row.dataset.index = String(index);
      row.tabIndex = 0;
      if (index === state.open) { row.className = "open"; }
      var cells = [
        String(index + 1), image.key, String(image.gt), String(image.pred), String(image.tp),
        String(image.fp), String(image.fn), fixed(image.miou, 3)
      ];
      cells.forEach(function (text, column) {
        var cell = element("td", text);
        if (column === 0) { cell.className = "text"; }
        if (column === 1) { cell.className = "key"; cell.title = image.key; }
        row.appendChild(cell);
      });
      var notes = [];
      if (image.missing) { notes.push("no prediction file"); }
      if (image.gt_ignored) { notes.push(image.gt_ignored + " difficult"); }
      var note = element("td", notes.join(", "));
      note.className = "text flag";
      row.appendChild(note);
      rows.appendChild(row);
    });
    body.replaceChildren(rows);
    var pages = Math.max(1, Math.ceil(state.order.length / PAGE_SIZE));
    byId("page-label").textContent = "page " + (state.page + 1) + " of " + pages;
    byId("page-first").disabled = byId("page-prev").disabled = state.page === 0;
    byId("page-next").disabled = byId("page-last").disabled = state.page >= pages - 1;
  }

  function sortBy(column) {
    if (state.sort === column) {
      state.descending = !state.descending;
    } else {
      state.sort = column;
      // Names and ranks read up from the top; counts read most first.
      state.descending = !(column === "key" || column === "rank");
    }
    document.querySelectorAll("#image-table th[data-sort]").forEach(function (th) {
      if (th.dataset.sort === column) {
        th.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
    state.page = 0;
    refresh();
  }

  function shown(kind, outcome, score) {
    var name = outcome === "ignored" ? "ignored" : kind + "-" + outcome;
    var box = document.querySelector('#overlay input[data-show="' + name + '"]');
    if (box && !box.checked) { return false; }
    var minimum = Number(byId("overlay-score").value);
    return !(kind === "pred" && score !== null && score < minimum);
  }

  function outcomeName(outcome) {
    return outcome === "ignored" ? "ignored" : outcome.toUpperCase();
  }

  function describe(kind, box) {
    var outcome = outcomes[box[5]];
    var parts = [kind === "gt" ? "GT" : "pred", classes[box[0]], outcomeName(outcome)];
    if (kind === "pred" && box[7] !== null) { parts.push("score " + box[7].toFixed(3)); }
    if (box[6] !== null) {
      var matched = outcome === "tp" || (outcome === "ignored" && (kind === "gt" || box.length > 8));
      parts.push((matched ? "IoU " : "best IoU ") + box[6].toFixed(3));
    }
    parts.push("[" + box.slice(1, 5).join(", ") + "]");
    return parts.join(" · ");
  }

  function drawOverlay() {
    var index = state.open;
    var image = images[index];
    var width = image.w, height = image.h;
    var svg = svgElement("svg", {
      viewBox: "0 0 " + width + " " + height, width: width, height: height,
      role: "img", "aria-label": "overlay of " + image.key
    });
    if (image.pic) {
      var uri = byId("pic-" + index).textContent.trim();
      svg.appendChild(svgElement("image", {
        href: uri, x: 0, y: 0, width: width, height: height, preserveAspectRatio: "none"
      }));
    } else {
      svg.appendChild(svgElement("rect", { class: "canvas", x: 0, y: 0, width: width, height: height }));
    }
    var fontSize = Math.max(width, height) / 55;
    var labels = byId("overlay-labels").checked;
    var list = document.createDocumentFragment();
    // Drawn bottom to top: ignored, matched GT, TP, FP, then FN, so misses stay visible.
    var layers = [
      ["gt", "ignored"], ["pred", "ignored"], ["gt", "tp"], ["pred", "tp"], ["pred", "fp"],
      ["gt", "fn"]
    ];
    var rects = [];
    layers.forEach(function (layer) {
      var kind = layer[0];
      var boxes = kind === "gt" ? image.g : image.p;
      boxes.forEach(function (box, boxIndex) {
        var outcome = outcomes[box[5]];
        if (outcome !== layer[1]) { return; }
        var score = kind === "pred" ? box[7] : null;
        if (!shown(kind, outcome, score)) { return; }
        var id = kind + "-" + boxIndex;
        var rect = svgElement("rect", {
          class: "box " + kind + "-" + outcome, x: box[1], y: box[2],
          width: Math.max(box[3] - box[1], 0), height: Math.max(box[4] - box[2], 0),
          "data-kind": kind, "data-outcome": outcome, "data-box": id
        });
        var title = svgElementText("title", describe(kind, box));
        rect.appendChild(title);
        svg.appendChild(rect);
        rects.push([kind, boxIndex, box, outcome]);
        if (labels) {
          var text = kind === "pred" && score !== null
            ? classes[box[0]] + " " + score.toFixed(2) : classes[box[0]];
          var label = svgElementText("text", text);
          label.setAttribute("class", "label");
          label.setAttribute("x", String(box[1] + fontSize * 0.2));
          label.setAttribute("y", String(kind === "gt" ? box[4] - fontSize * 0.3 : box[2] + fontSize));
          label.setAttribute("font-size", String(fontSize));
          svg.appendChild(label);
        }
      });
    });
    rects.sort(function (a, b) {
      return a[0] === b[0] ? a[1] - b[1] : (a[0] === "gt" ? -1 : 1);
    });
    rects.forEach(function (entry) {
      var kind = entry[0], box = entry[2];
      var row = element("tr");
      row.dataset.box = kind + "-" + entry[1];
      [
        (kind === "gt" ? "GT #" : "pred #") + entry[1], classes[box[0]], outcomeName(entry[3]),
        kind === "pred" ? fixed(box[7], 3) : "", fixed(box[6], 3), box.slice(1, 5).join(", ")
      ].forEach(function (text, column) {
        var cell = element("td", text);
        if (column === 0 || column === 1 || column === 2 || column === 5) { cell.className = "text"; }
        row.appendChild(cell);
      });
      list.appendChild(row);
    });
    byId("overlay-canvas").replaceChildren(svg);
    document.querySelector("#box-list tbody").replaceChildren(list);
  }

  function svgElementText(tag, text) {
    var node = document.createElementNS(SVG, tag);
    node.textContent = text;
    return node;
  }

  function openImage(index) {
    state.open = index;
    var image = images[index];
    var panel = byId("overlay");
    panel.hidden = false;
    byId("overlay-title").textContent = image.key;
    var info = [];
    if (image.file) { info.push(image.file); }
    info.push(image.w + " × " + image.h + (image.sized ? "" : " (no <size>: the boxes' extent)"));
    info.push("TP " + image.tp + " · FP " + image.fp + " · FN " + image.fn);
    if (image.missing) { info.push("no prediction file: every object counts as missed"); }
    if (!image.pic) { info.push("blank canvas"); }
    byId("overlay-info").textContent = info.join(" · ");
    drawOverlay();
    document.querySelectorAll("#image-table tbody tr").forEach(function (row) {
      row.classList.toggle("open", Number(row.dataset.index) === index);
    });
    var position = state.order.indexOf(index);
    byId("overlay-prev").disabled = position <= 0;
    byId("overlay-next").disabled = position < 0 || position >= state.order.length - 1;
    // The view opens below the table: bring it into sight, or a click seems to do nothing.
    panel.scrollIntoView({block: "nearest"});
  }

  function step(delta) {
    var position = state.order.indexOf(state.open) + delta;
    if (position < 0 || position >= state.order.length) { return; }
    var page = Math.floor(position / PAGE_SIZE);
    if (page !== state.page) { state.page = page; renderPage(); }
    openImage(state.order[position]);
  }

  function highlight(event, on) {
    var target = event.target.closest("[data-box]");
    if (!target) { return; }
    var id = target.dataset.box;
    document.querySelectorAll('#overlay [data-box="' + id + '"]').forEach(function (node) {
      node.classList.toggle("hl", on);
    });
  }

  document.querySelectorAll("#image-table th[data-sort] button").forEach(function (button) {
    button.addEventListener("click", function () {
      sortBy(button.parentElement.dataset.sort);
    });
  });
  var tableBody = document.querySelector("#image-table tbody");
  tableBody.addEventListener("click", function (event) {
    var row = event.target.closest("tr");
    if (row) { openImage(Number(row.dataset.index)); }
  });
  tableBody.addEventListener("keydown", function (event) {
    var row = event.target.closest("tr");
    if (row && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      openImage(Number(row.dataset.index));
    }
  });
  byId("filter-class").addEventListener("change", function (event) {
    state.cls = Number(event.target.value); state.page = 0; refresh();
  });
  byId("filter-fn").addEventListener("change", function (event) {
    state.hasFn = event.target.checked; state.page = 0; refresh();
  });
  byId("filter-fp").addEventListener("change", function (event) {
    state.hasFp = event.target.checked; state.page = 0; refresh();
  });
  byId("filter-text").addEventListener("input", function (event) {
    state.text = event.target.value.trim().toLowerCase(); state.page = 0; refresh();
  });
  byId("page-first").addEventListener("click", function () { state.page = 0; renderPage(); });
  byId("page-prev").addEventListener("click", function () { state.page -= 1; renderPage(); });
  byId("page-next").addEventListener("click", function () { state.page += 1; renderPage(); });
  byId("page-last").addEventListener("click", function () {
    state.page = Math.max(0, Math.ceil(state.order.length / PAGE_SIZE) - 1); renderPage();
  });
  byId("overlay-prev").addEventListener("click", function () { step(-1); });
  byId("overlay-next").addEventListener("click", function () { step(1); });
  document.querySelectorAll("#overlay .controls input").forEach(function (input) {
    input.addEventListener("input", function () {
      byId("overlay-score-value").textContent = Number(byId("overlay-score").value).toFixed(2);
      if (state.open >= 0) { drawOverlay(); }
    });
  });
  var overlay = byId("overlay");
  overlay.addEventListener("mouseover", function (event) { highlight(event, true); });
  overlay.addEventListener("mouseout", function (event) { highlight(event, false); });
  refresh();
}());
