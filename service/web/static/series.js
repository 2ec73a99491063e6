// Series explorer: changing the source or platform drops the kernel and metric picked for the
// old one (the server answers an unknown kernel with a 404 naming the valid ones, and never
// swaps in another series); changing the kernel drops the metric. Then the form is sent.
(function () {
  "use strict";
  var form = document.querySelector("form[data-testid=series-form]");
  if (!form) return;
  var below = { source: ["platform", "kernel", "metric"], platform: ["kernel", "metric"], kernel: ["metric"] };
  Object.keys(below).forEach(function (name) {
    var select = form.elements[name];
    if (!select) return;
    select.addEventListener("change", function () {
      below[name].forEach(function (dep) { if (form.elements[dep]) form.elements[dep].disabled = true; });
      form.submit();
    });
  });
  if (form.elements.metric) {
    form.elements.metric.addEventListener("change", function () { form.submit(); });
  }
})();
