// Renders /docs with Redoc's standalone bundle (vendored beside this file),
// from the OpenAPI document the server serves.
(function () {
  "use strict";
  function start() {
    var el = document.getElementById("redoc");
    if (!el || !window.Redoc) { return; }
    window.Redoc.init(el.getAttribute("data-spec-url"), {
      hideDownloadButton: false,
      expandResponses: "200",
      theme: { typography: { fontFamily: "system-ui, sans-serif", headings: { fontFamily: "system-ui, sans-serif" } } }
    }, el);
  }
  if (document.readyState !== "loading") { start(); } else { document.addEventListener("DOMContentLoaded", start); }
})();
