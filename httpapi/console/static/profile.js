// deskkit console: the countdown of the profile's change of address. An
// element with data-countdown="N" (seconds) counts down in its .countdown
// child, and the buttons whose data-wait-for names it stay disabled until
// it reaches 0; then it hides. Without this script the buttons work and
// the server answers the limit's message with the wait.
(function () {
  "use strict";
  // The words come from the element, in the page's language:
  // data-one ("1 second") and data-many ("%d seconds").
  function words(el, n) {
    var w = n === 1 ? el.getAttribute("data-one") : el.getAttribute("data-many");
    return w ? w.replace("%d", String(n)) : String(n);
  }
  function start(root) {
    var els = root.querySelectorAll ? root.querySelectorAll("[data-countdown]") : [];
    Array.prototype.forEach.call(els, function (el) {
      if (el.getAttribute("data-started")) { return; }
      el.setAttribute("data-started", "1");
      var left = parseInt(el.getAttribute("data-countdown"), 10);
      var out = el.querySelector(".countdown");
      var buttons = document.querySelectorAll('[data-wait-for="' + el.id + '"]');
      function enable(on) { Array.prototype.forEach.call(buttons, function (b) { b.disabled = !on; }); }
      if (!(left > 0)) { el.hidden = true; return; }
      enable(false);
      var timer = setInterval(function () {
        left -= 1;
        if (left <= 0) {
          clearInterval(timer);
          el.hidden = true;
          enable(true);
          return;
        }
        if (out) { out.textContent = words(el, left); }
      }, 1000);
    });
  }
  if (document.readyState !== "loading") { start(document); } else {
    document.addEventListener("DOMContentLoaded", function () { start(document); });
  }
  document.addEventListener("htmx:load", function (e) { start(e.target); });
})();
