// The app shell: under 700 px the menu folds behind its button (without this script it stays
// open, in the flow); an open dropdown of the top bar closes on Escape or a click elsewhere;
// code blocks of an issue can take focus to scroll.
(function () {
  "use strict";

  const toggle = document.querySelector(".menu-toggle");
  const menu = document.getElementById("shell-menu");
  const narrow = window.matchMedia("(max-width: 700px)");

  function fold() {
    if (!toggle || !menu) return;
    if (narrow.matches) {
      toggle.hidden = false;
      menu.hidden = toggle.getAttribute("aria-expanded") !== "true";
    } else {
      toggle.hidden = true;
      menu.hidden = false;
    }
  }
  if (toggle && menu) {
    toggle.addEventListener("click", function () {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      menu.hidden = !open;
    });
    narrow.addEventListener("change", fold);
    fold();
  }

  // A block of code in an issue (a traceback, a log) scrolls inside its box; a keyboard user
  // scrolls it once it can take focus. The HTML is stored sanitised, without these.
  document.querySelectorAll(".markdown pre").forEach(function (pre) {
    if (pre.hasAttribute("tabindex")) return;
    pre.tabIndex = 0;
    pre.setAttribute("role", "region");
    pre.setAttribute("aria-label", "Code block");
  });

  // A box that scrolls sideways (a wide table on a phone) takes focus, to be scrolled by keys.
  document.querySelectorAll("main table, main figure, .table-scroll, .figure-scroll").forEach(function (box) {
    if (box.scrollWidth > box.clientWidth && !box.hasAttribute("tabindex")) box.tabIndex = 0;
  });

  const dropdowns = Array.from(document.querySelectorAll("header details.dropdown"));
  document.addEventListener("click", function (event) {
    dropdowns.forEach(function (dropdown) {
      if (dropdown.open && !dropdown.contains(event.target)) dropdown.open = false;
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      if (toggle && menu && !toggle.hidden && toggle.getAttribute("aria-expanded") === "true") {
        toggle.setAttribute("aria-expanded", "false");
        menu.hidden = true;
        toggle.focus();
      }
      dropdowns.forEach(function (dropdown) {
        if (dropdown.open) {
          dropdown.open = false;
          dropdown.querySelector("summary").focus();
        }
      });
    }
  });
})();
