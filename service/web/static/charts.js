// Draw every [data-chart] element from the JSON block next to it, with the Plotly bundle the
// app serves itself (no CDN). Strings from the store (kernel names, commit subjects) are
// entity-escaped before Plotly sees them: Plotly renders a subset of HTML in labels.
//
// What a chart shows (see service/web/charts.py): one axis per unit (speedup ×, latency ms,
// compile time s), the detector's before/after levels with their scatter band, failed
// nightlies as red × along the bottom, and the main series drawn last so a line with the same
// values (dashed, "= main" in the legend) never hides it.
(function () {
  "use strict";
  var COLORS = ["#1f6feb", "#8250df", "#bf8700", "#cf222e", "#1a7f37", "#6e7781", "#0598bc"];
  var MARK = { good: "#1a7f37", bad: "#cf222e", event: "#8c959f" };

  function esc(s) {
    return String(s == null ? "" : s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function lineTrace(t, i, small) {
    var copy = !!t.same_as;
    return {
      type: "scatter",
      mode: small ? "lines" : (copy ? "lines" : "lines+markers"),
      name: esc(t.name) + (copy ? " (= " + esc(t.same_as) + ")" : ""),
      x: t.x,
      y: t.y,
      customdata: t.sha,
      yaxis: t.axis || "y",
      connectgaps: false,
      legendrank: t.main ? 1 : 100 + i,
      line: {
        width: t.main ? 2.5 : (copy ? 3 : 1.4), color: COLORS[i % COLORS.length],
        dash: copy ? "dash" : (t.axis && t.axis !== "y" ? "dot" : "solid")
      },
      marker: { size: small ? 3 : (t.main ? 6 : 4) },
      hovertemplate: "%{x|%Y-%m-%d} %{customdata}<br>%{y:.4g}<extra>" + esc(t.name) + "</extra>"
    };
  }

  function failedMarks(spec, notes, small) {
    // Failed nightlies of every series, once each, as a red × on the bottom edge (hover says
    // which night); a legend entry without points explains the symbol.
    var seen = {}, xs = [];
    spec.traces.forEach(function (t) {
      (t.failed || []).forEach(function (x) { if (!seen[x]) { seen[x] = true; xs.push(x); } });
    });
    xs.forEach(function (x) {
      notes.push({ x: x, xref: "x", y: 0, yref: "paper", yanchor: "bottom", text: "×", showarrow: false,
                   font: { size: small ? 11 : 15, color: "#cf222e" }, hovertext: "failed nightly " + x.slice(0, 10) });
    });
    if (!xs.length || small) return null;
    return { type: "scatter", mode: "markers", name: "failed nightly", x: [null], y: [null], legendrank: 1000,
             marker: { symbol: "x-thin-open", size: 10, line: { width: 2, color: "#cf222e" } } };
  }

  function levelShapes(spec, shapes, notes, narrow) {
    (spec.levels || []).forEach(function (lv, i) {
      var yref = lv.axis || "y";
      shapes.push({ type: "rect", xref: "x", yref: yref, x0: lv.x0, x1: lv.x1, y0: lv.lo, y1: lv.hi,
                    fillcolor: "rgba(31,111,235,0.10)", line: { width: 0 }, layer: "below" });
      shapes.push({ type: "line", xref: "x", yref: yref, x0: lv.x0, x1: lv.x1, y0: lv.y, y1: lv.y,
                    line: { color: "#0a3069", width: 2, dash: "dash" } });
      if (!narrow) {
        // "before" at the left end, "after" at the right: clear of the last-good/first-bad labels
        notes.push({ x: i ? lv.x1 : lv.x0, xref: "x", y: lv.hi, yref: yref, xanchor: i ? "right" : "left", yanchor: "bottom",
                     text: esc(lv.label), showarrow: false, font: { size: 11, color: "#0a3069" } });
      }
    });
  }

  function draw(el) {
    var src = document.getElementById(el.getAttribute("data-chart"));
    if (!src || !window.Plotly) return;
    var spec = JSON.parse(src.textContent);
    var small = !!spec.small;
    var narrow = el.clientWidth < 520; // a phone: smaller margins, fewer labels
    var axes = spec.axes || { y: spec.ylabel || "" };
    var used = {};
    var traces = spec.traces.map(function (t, i) {
      used[t.axis || "y"] = true;
      return lineTrace(t, i, small);
    });
    // the main series last, so it is drawn on top of everything else
    traces.sort(function (a, b) { return (a.legendrank === 1) - (b.legendrank === 1); });
    var shapes = [], notes = [];
    var failedLegend = failedMarks(spec, notes, small);
    if (failedLegend) traces.push(failedLegend);
    levelShapes(spec, shapes, notes, narrow || small);
    (spec.marks || []).forEach(function (m, i) {
      shapes.push({
        type: "line", xref: "x", yref: "paper", x0: m.x, x1: m.x, y0: 0, y1: 1,
        line: { color: MARK[m.kind] || MARK.event, width: m.kind === "event" ? 1 : 2, dash: m.kind === "event" ? "dot" : "solid" }
      });
      if (m.label && !small && !(narrow && m.kind === "event")) {
        notes.push({
          x: m.x, xref: "x", yref: "paper", y: 1 - (i % 4) * 0.07, yanchor: "top", xanchor: "left",
          text: esc(m.label), showarrow: false, font: { size: 11, color: MARK[m.kind] || MARK.event },
          bgcolor: "rgba(255,255,255,0.8)"
        });
      }
    });
    var right = (used.y2 ? 1 : 0) + (used.y3 ? 1 : 0);
    var second = narrow ? 0.16 : 0.07; // share of the width a second right-hand axis takes
    var tick = { size: small ? 9 : (narrow ? 10 : 12) };
    var titleFont = { size: narrow ? 11 : 13 };
    var layout = {
      height: small ? 130 : (narrow ? 320 : (el.classList.contains("tall") ? 460 : 380)),
      margin: small ? { l: 34, r: 6, t: 6, b: 22 } : { l: narrow ? 46 : 60, r: right ? (narrow ? 46 : 64) : 16, t: 28, b: 40 },
      showlegend: !small,
      legend: { orientation: "h", y: -0.15, font: { size: narrow ? 10 : 12 } },
      xaxis: { type: "date", tickfont: tick, domain: [0, right === 2 ? 1 - second : 1], nticks: narrow ? 4 : undefined },
      yaxis: { title: small ? undefined : { text: esc(axes.y || ""), font: titleFont }, tickfont: tick, tickformat: ".3~g" },
      shapes: shapes,
      annotations: notes,
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "#fff"
    };
    function rightAxis(name, extra) {
      var ax = { title: { text: esc(axes[name] || ""), font: titleFont }, overlaying: "y", side: "right",
                 showgrid: false, tickformat: ".3~g", tickfont: tick };
      Object.keys(extra).forEach(function (k) { ax[k] = extra[k]; });
      return ax;
    }
    // ms next to the plot; s (compile time) further right when both are shown
    if (used.y2) layout.yaxis2 = rightAxis("y2", { anchor: "x" });
    if (used.y3) layout.yaxis3 = rightAxis("y3", used.y2 ? { anchor: "free", position: 1 } : { anchor: "x" });
    if (small) {
      // Same relative scale for every small chart (+-30% around the median), so a step stands
      // out and noise does not fill the box; fall back to autoscale when values leave it.
      var main = traces.filter(function (t) { return t.legendrank === 1; })[0] || traces[0];
      var ys = main ? main.y.filter(function (v) { return v !== null; }).slice().sort(function (a, b) { return a - b; }) : [];
      if (ys.length) {
        var med = ys[Math.floor(ys.length / 2)];
        if (med > 0 && ys[0] >= med * 0.7 && ys[ys.length - 1] <= med * 1.3) layout.yaxis.range = [med * 0.7, med * 1.3];
      }
    }
    window.Plotly.newPlot(el, traces, layout, { displaylogo: false, responsive: true, staticPlot: small });
    el.setAttribute("data-rendered", String(spec.traces.reduce(function (n, t) {
      return n + t.y.filter(function (v) { return v !== null; }).length;
    }, 0)));
  }

  document.querySelectorAll("[data-chart]").forEach(draw);
})();
