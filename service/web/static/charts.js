// Draw every [data-chart] element from the JSON block next to it, with the Plotly bundle the
// app serves itself (no CDN). Strings from the store (kernel names, commit subjects) are
// entity-escaped before Plotly sees them: Plotly renders a subset of HTML in labels.
(function () {
  "use strict";
  var COLORS = ["#1f6feb", "#8250df", "#bf8700", "#cf222e", "#1a7f37", "#6e7781", "#0598bc"];
  var MARK = { good: "#1a7f37", bad: "#cf222e", event: "#8c959f" };

  function esc(s) {
    return String(s == null ? "" : s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function draw(el) {
    var src = document.getElementById(el.getAttribute("data-chart"));
    if (!src || !window.Plotly) return;
    var spec = JSON.parse(src.textContent);
    var small = !!spec.small;
    var hasY2 = false;
    var traces = spec.traces.map(function (t, i) {
      if (t.axis === "y2") hasY2 = true;
      return {
        type: "scatter",
        mode: small ? "lines" : "lines+markers",
        name: esc(t.name),
        x: t.x,
        y: t.y,
        customdata: t.sha,
        yaxis: t.axis === "y2" ? "y2" : "y",
        connectgaps: false,
        line: { width: t.main ? 2.5 : 1.4, color: COLORS[i % COLORS.length], dash: t.axis === "y2" ? "dot" : "solid" },
        marker: { size: small ? 3 : (t.main ? 6 : 4) },
        hovertemplate: "%{x|%Y-%m-%d} %{customdata}<br>%{y:.4g}<extra>" + esc(t.name) + "</extra>"
      };
    });
    var shapes = [], notes = [];
    (spec.marks || []).forEach(function (m, i) {
      shapes.push({
        type: "line", xref: "x", yref: "paper", x0: m.x, x1: m.x, y0: 0, y1: 1,
        line: { color: MARK[m.kind] || MARK.event, width: m.kind === "event" ? 1 : 2, dash: m.kind === "event" ? "dot" : "solid" }
      });
      if (m.label && !small) {
        notes.push({
          x: m.x, xref: "x", yref: "paper", y: 1 - (i % 4) * 0.07, yanchor: "top", xanchor: "left",
          text: esc(m.label), showarrow: false, font: { size: 11, color: MARK[m.kind] || MARK.event },
          bgcolor: "rgba(255,255,255,0.8)"
        });
      }
    });
    var layout = {
      height: small ? 130 : (el.classList.contains("tall") ? 460 : 380),
      margin: small ? { l: 34, r: 6, t: 6, b: 22 } : { l: 56, r: hasY2 ? 60 : 16, t: 28, b: 40 },
      showlegend: !small,
      legend: { orientation: "h", y: -0.15 },
      xaxis: { type: "date", tickfont: { size: small ? 9 : 12 } },
      yaxis: { title: small ? undefined : { text: esc(spec.ylabel || "") }, tickfont: { size: small ? 9 : 12 }, tickformat: ".3~g" },
      shapes: shapes,
      annotations: notes,
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "#fff"
    };
    if (small) {
      // Same relative scale for every small chart (+-30% around the median), so a step stands
      // out and noise does not fill the box; fall back to autoscale when values leave it.
      var ys = traces[0] ? traces[0].y.filter(function (v) { return v !== null; }).slice().sort(function (a, b) { return a - b; }) : [];
      if (ys.length) {
        var med = ys[Math.floor(ys.length / 2)];
        if (med > 0 && ys[0] >= med * 0.7 && ys[ys.length - 1] <= med * 1.3) layout.yaxis.range = [med * 0.7, med * 1.3];
      }
    }
    if (hasY2) {
      layout.yaxis2 = { title: { text: esc(spec.y2label || "") }, overlaying: "y", side: "right", showgrid: false, tickformat: ".3~g" };
    }
    window.Plotly.newPlot(el, traces, layout, { displaylogo: false, responsive: true, staticPlot: small });
    el.setAttribute("data-rendered", String(traces.reduce(function (n, t) {
      return n + t.y.filter(function (v) { return v !== null; }).length;
    }, 0)));
  }

  document.querySelectorAll("[data-chart]").forEach(draw);
})();
