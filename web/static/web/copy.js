// Copy buttons: a button[data-copy="ID"] copies the value of the field with that id (the API
// token page's new key). The Clipboard API where the browser allows it; else the field's text is
// selected and the browser's own copy command tried, and the status says what to do. Buttons
// are hidden in the HTML and shown here, so that a page without this script shows none that
// cannot work.
(function () {
  "use strict";

  function say(button, text) {
    const status = document.getElementById(button.dataset.copyStatus);
    if (status) status.textContent = text;
  }

  function fallback(button, field) {
    field.focus();
    field.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
    say(button, copied ? "Copied." : "Selected: press Ctrl+C (⌘C on a Mac) to copy.");
  }

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(
          function () { say(button, "Copied."); },
          function () { fallback(button, field); }
        );
      } else {
        fallback(button, field);
      }
    });
  });
})();
