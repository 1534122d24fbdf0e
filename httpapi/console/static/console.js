// deskkit console: the little script the pages need, loaded from the
// console's own origin (the Content-Security-Policy allows no inline
// script). Everything here also works without it, one click more.
(function () {
  "use strict";
  function ready(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }
  ready(function () {
    // The one-time link's page posts its code at once: the POST starts
    // within the site, so the SameSite=Strict cookie it sets is kept.
    var f = document.querySelector("form[data-autosubmit]");
    if (f) { f.requestSubmit ? f.requestSubmit() : f.submit(); }
    // The footer's time zone picker, while the reader has picked none,
    // preselects the browser's zone: one click keeps it.
    var z = document.querySelector("select[data-browser-zone]");
    var tz = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (z && tz && tz !== z.value) {
      var found = Array.prototype.some.call(z.options, function (o) { return o.value === tz; });
      if (!found) { z.add(new Option(tz, tz), 1); }
      z.value = tz;
    }
  });
  // A select marked data-submit-on-change submits its form when changed
  // (the channel form's type); without script its button does.
  document.addEventListener("change", function (e) {
    var s = e.target;
    if (s && s.matches && s.matches("select[data-submit-on-change]") && s.form) {
      s.form.requestSubmit ? s.form.requestSubmit() : s.form.submit();
    }
  });
  // Copy buttons: <button data-copy="ELEMENT-ID" data-copied="WORD">, which
  // says WORD (in the page's language) once copied.
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button[data-copy]") : null;
    if (!b) { return; }
    var el = document.getElementById(b.getAttribute("data-copy"));
    if (!el || !navigator.clipboard) { return; }
    e.preventDefault();
    navigator.clipboard.writeText(el.value !== undefined ? el.value : el.textContent).then(function () {
      b.textContent = b.getAttribute("data-copied") || b.textContent;
    });
  });
})();
