// The labeling page: keyboard shortcuts, category filter, evidence quotes, draft autosave
// with a retry queue, and time spent. Plain script, no build step; the page works without it.
(function () {
  "use strict";

  const form = document.getElementById("label-form");
  if (!form) return;

  const dimensions = Array.from(form.querySelectorAll("fieldset.dimension"));
  const filter = document.getElementById("category-filter");
  const saveState = document.getElementById("save-state");
  const versionInput = form.elements.namedItem("version");
  const secondsInput = form.elements.namedItem("seconds_spent");
  const dialog = document.getElementById("shortcuts");
  const storageKey = "issuecoder:draft:" + form.dataset.assignment;
  let current = 0;

  // ---- time spent: counts while the tab is visible, from page open to submit ----
  const secondsAtOpen = parseInt(secondsInput.value || "0", 10);
  let visibleSince = document.visibilityState === "visible" ? Date.now() : null;
  let visibleMillis = 0;
  function secondsSpent() {
    const running = visibleSince === null ? 0 : Date.now() - visibleSince;
    return secondsAtOpen + Math.round((visibleMillis + running) / 1000);
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      visibleSince = Date.now();
    } else if (visibleSince !== null) {
      visibleMillis += Date.now() - visibleSince;
      visibleSince = null;
      if (pending) save(); // leaving the tab is a good moment to send what is waiting
    }
  });

  // ---- current dimension ----
  // A dimension that does not apply yet is disabled (updateApplicability): `j` and `k` pass
  // over it, as Tab does.
  function applies(fieldset) {
    return !fieldset.classList.contains("not-applicable");
  }
  function nextApplicable(from, step) {
    for (let index = from; index >= 0 && index < dimensions.length; index += step) {
      if (applies(dimensions[index])) return index;
    }
    return current;
  }
  function focusDimension(index) {
    current = Math.max(0, Math.min(dimensions.length - 1, index));
    const fieldset = dimensions[current];
    const target =
      fieldset.querySelector("li.category:not([hidden]) input:checked") ||
      fieldset.querySelector("li.category:not([hidden]) input");
    (target || fieldset).focus();
    fieldset.scrollIntoView({ block: "nearest" });
    markCurrent();
  }
  function markCurrent() {
    dimensions.forEach(function (fieldset, index) {
      fieldset.classList.toggle("current", index === current);
    });
    numberVisibleCategories();
  }
  form.addEventListener("focusin", function (event) {
    const fieldset = event.target.closest("fieldset.dimension");
    if (fieldset) {
      current = dimensions.indexOf(fieldset);
      markCurrent();
    }
  });

  // Number keys pick the n-th visible category of the current dimension.
  function visibleInputs(fieldset) {
    return Array.from(fieldset.querySelectorAll("li.category:not([hidden]) input"));
  }
  function numberVisibleCategories() {
    dimensions.forEach(function (fieldset, index) {
      fieldset.querySelectorAll("kbd.number").forEach(function (kbd) { kbd.textContent = ""; });
      if (index !== current) return;
      visibleInputs(fieldset).slice(0, 9).forEach(function (input, position) {
        const kbd = input.parentElement.querySelector("kbd.number");
        if (kbd) kbd.textContent = String(position + 1);
      });
    });
  }
  function pick(number) {
    if (!applies(dimensions[current])) return;
    const input = visibleInputs(dimensions[current])[number - 1];
    if (!input) return;
    if (input.type === "checkbox") {
      input.checked = !input.checked;
    } else {
      input.checked = true;
    }
    input.focus();
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // ---- dimensions that apply only after another answer (screening) ----
  function chosenKeys(key) {
    return Array.from(form.querySelectorAll('input[name="dim-' + key + '"]:checked')).map(
      function (input) { return input.value; }
    );
  }
  // Whether a dimension applies is looked up in the table the server derived from its own
  // rule (Dimension.applicability_table): no copy of the rule lives here.
  function updateApplicability() {
    dimensions.forEach(function (fieldset) {
      if (!fieldset.dataset.applicability) return;
      const table = JSON.parse(fieldset.dataset.applicability);
      const holds = Object.keys(table).every(function (key) {
        const chosen = chosenKeys(key).filter(Boolean);
        if (chosen.length === 0) return table[key][""] === true;
        return chosen.some(function (value) { return table[key][value] === true; });
      });
      fieldset.classList.toggle("not-applicable", !holds);
      fieldset.disabled = !holds;
    });
    if (!applies(dimensions[current])) {
      current = nextApplicable(current, -1);
      markCurrent();
    }
  }

  // ---- category filter ----
  function applyFilter() {
    const words = filter.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
    form.querySelectorAll("li.category").forEach(function (item) {
      const text = item.dataset.search || "";
      item.hidden = words.length > 0 && !words.every(function (word) { return text.indexOf(word) !== -1; });
    });
    numberVisibleCategories();
  }
  filter.addEventListener("input", applyFilter);

  // ---- evidence quotes ----
  function quoteInto(textareaName) {
    const selection = window.getSelection();
    const issue = document.getElementById("issue");
    if (!selection || selection.isCollapsed || !issue.contains(selection.anchorNode)) {
      saveState.textContent = "Select some text of the issue first, then quote it.";
      return;
    }
    const textarea = form.elements.namedItem(textareaName);
    const quote = selection.toString().trim();
    textarea.value = (textarea.value ? textarea.value + "\n" : "") + "> " + quote.replace(/\n/g, "\n> ");
    textarea.closest("details").open = true;
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
    saveState.textContent = "Quoted into the evidence.";
  }
  form.querySelectorAll(".quote-button").forEach(function (button) {
    button.addEventListener("mousedown", function (event) { event.preventDefault(); });
    button.addEventListener("click", function () { quoteInto(button.dataset.target); });
  });

  // ---- autosave with a queue that survives a lost connection and a reload ----
  let timer = null;
  let saving = false;
  let pending = false;
  let retryDelay = 1000;
  let conflict = false;
  let submitting = false; // the form is on its way (see "submitting" below)
  let held = null; // {submitter, timer}: a submit waiting for the draft save in flight
  let holdExpired = false;

  function snapshot() {
    secondsInput.value = String(secondsSpent());
    const data = new FormData(form);
    data.set("action", "draft");
    return data;
  }
  function remember(data) {
    const entries = [];
    data.forEach(function (value, key) { entries.push([key, value]); });
    try { localStorage.setItem(storageKey, JSON.stringify(entries)); } catch (error) { /* full */ }
  }
  function forget() {
    try { localStorage.removeItem(storageKey); } catch (error) { /* unavailable */ }
  }
  function saveSoon(delay) {
    if (conflict || submitting) return;
    pending = true;
    remember(snapshot());
    clearTimeout(timer);
    timer = setTimeout(save, delay === undefined ? 800 : delay);
  }
  function save() {
    if (saving || !pending || conflict || submitting || held) return;
    saving = true;
    pending = false;
    const data = snapshot();
    saveState.textContent = "Saving…";
    fetch(form.dataset.autosaveUrl, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { "X-CSRFToken": data.get("csrfmiddlewaretoken"), Accept: "application/json" },
    })
      .then(function (response) {
        return response.json().then(function (body) { return { status: response.status, body: body }; });
      })
      .then(function (result) {
        saving = false;
        if (result.status === 200) {
          versionInput.value = String(result.body.version);
          retryDelay = 1000;
          if (!pending) forget();
          saveState.textContent = "Draft saved at " + new Date().toLocaleTimeString();
        } else if (result.status === 409) {
          conflict = true;
          saveState.textContent = result.body.error.message;
          saveState.classList.add("error");
        } else {
          saveState.textContent = result.body.error ? result.body.error.message : "Not saved.";
          saveState.classList.add("error");
        }
        // A held submit goes now, with the version this reply brought (or, after a conflict,
        // with the old one, so that the server refuses it as before).
        if (held) {
          releaseHeld();
        } else if (result.status === 200 && pending) {
          save();
        }
      })
      .catch(function () {
        saving = false;
        if (submitting) return; // the page is leaving with the submit, which carries the labels
        if (held) {
          releaseHeld();
          return;
        }
        // Offline or the server is away: keep the draft (it is in localStorage) and retry.
        pending = true;
        saveState.textContent = "Offline: your labels are kept here and will be saved when the connection is back.";
        clearTimeout(timer);
        timer = setTimeout(save, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 30000);
      });
  }
  window.addEventListener("online", function () { retryDelay = 1000; save(); });
  form.addEventListener("change", function (event) {
    if (event.target.name && event.target.name !== "skip_reason") {
      updateApplicability();
      saveSoon();
    }
  });
  form.addEventListener("input", function (event) {
    if (event.target.tagName === "TEXTAREA" || event.target.type === "text") {
      if (event.target.name !== "skip_reason") saveSoon(1500);
    }
  });

  // A draft kept in this browser from a save that never reached the server comes back.
  function restore() {
    let entries;
    try { entries = JSON.parse(localStorage.getItem(storageKey) || "null"); } catch (error) { entries = null; }
    if (!entries) return;
    const stored = new Map(entries);
    if (stored.get("version") !== versionInput.value) {
      forget(); // the server has moved on since; its state wins
      return;
    }
    dimensions.forEach(function (fieldset) {
      const key = fieldset.dataset.dimension;
      const chosen = entries.filter(function (entry) { return entry[0] === "dim-" + key; }).map(function (entry) { return entry[1]; });
      fieldset.querySelectorAll('input[name="dim-' + key + '"]').forEach(function (input) {
        input.checked = chosen.indexOf(input.value) !== -1;
      });
      ["rationale-", "evidence-", "proposal-"].forEach(function (prefix) {
        const field = form.elements.namedItem(prefix + key);
        if (field && stored.has(prefix + key)) field.value = stored.get(prefix + key);
      });
      const unsure = form.elements.namedItem("unsure-" + key);
      if (unsure) unsure.checked = stored.has("unsure-" + key);
    });
    saveState.textContent = "Restored labels that had not reached the server; saving…";
    saveSoon(0);
  }

  // ---- submitting (and the form's other buttons: save draft, skip) ----
  // Each save raises the assignment's version, and the server refuses a save that carries an
  // older one ("changed in another tab"). A submit sent while a draft save is on its way would
  // carry the version from before that save, so it is held until the draft's reply brings the
  // new one (at most HOLD_LIMIT_MS: a reply that never comes must not keep the annotator from
  // submitting). Once the submit is out, no draft save follows it: it carries every label, and
  // a late draft would only be refused.
  const HOLD_LIMIT_MS = 10000;
  function releaseHeld() {
    const submitter = held.submitter;
    clearTimeout(held.timer);
    held = null;
    if (submitter) {
      form.requestSubmit(submitter);
    } else {
      form.requestSubmit();
    }
  }
  form.addEventListener("submit", function (event) {
    if (submitting) {
      event.preventDefault(); // a second Ctrl+Enter (or a repeating key) while the first is out
      return;
    }
    clearTimeout(timer);
    if (saving && !holdExpired) {
      event.preventDefault();
      if (held) {
        held.submitter = event.submitter;
      } else {
        held = {
          submitter: event.submitter,
          timer: setTimeout(function () {
            holdExpired = true;
            releaseHeld();
          }, HOLD_LIMIT_MS),
        };
      }
      saveState.textContent = "Finishing the draft save, then submitting…";
      return;
    }
    submitting = true;
    pending = false;
    secondsInput.value = String(secondsSpent());
    forget();
  });
  // Back to this page from the browser's history cache: the submit that left it is over.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) submitting = false;
  });

  // ---- keyboard ----
  function typing(target) {
    return target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && ["text", "search"].indexOf(target.type) !== -1);
  }
  document.addEventListener("keydown", function (event) {
    // The shortcuts list, while open, keeps every key (Escape closes it).
    if (dialog.open) return;
    // Another form of the page (the discussion) keeps its keys to itself. The list's Close
    // button is not one: it keeps the focus for a moment after Escape closed the list, and a
    // key pressed then (a category's number, at once) is the page's.
    if (event.target.form && event.target.form !== form && !dialog.contains(event.target)) return;
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      form.requestSubmit(document.getElementById("submit-button"));
      return;
    }
    if (event.key === "Escape" && event.target === filter) {
      filter.value = "";
      applyFilter();
      focusDimension(current);
      return;
    }
    if (typing(event.target) || event.altKey || event.ctrlKey || event.metaKey) return;
    if (/^[1-9]$/.test(event.key)) {
      event.preventDefault();
      pick(parseInt(event.key, 10));
    } else if (event.key === "j") {
      event.preventDefault();
      focusDimension(nextApplicable(current + 1, 1));
    } else if (event.key === "k") {
      event.preventDefault();
      focusDimension(nextApplicable(current - 1, -1));
    } else if (event.key === "u") {
      event.preventDefault();
      const unsure = form.elements.namedItem("unsure-" + dimensions[current].dataset.dimension);
      unsure.checked = !unsure.checked;
      unsure.dispatchEvent(new Event("change", { bubbles: true }));
      saveState.textContent = (unsure.checked ? "Marked" : "Unmarked") + " unsure: " + dimensions[current].querySelector("legend").firstChild.textContent.trim();
    } else if (event.key === "q") {
      event.preventDefault();
      quoteInto("evidence-" + dimensions[current].dataset.dimension);
    } else if (event.key === "/") {
      event.preventDefault();
      filter.focus();
      filter.select();
    } else if (event.key === "s") {
      event.preventDefault();
      const skip = document.getElementById("skip");
      skip.open = true;
      document.getElementById("skip-reason").focus();
    } else if (event.key === "?") {
      event.preventDefault();
      dialog.showModal();
    }
  });
  document.getElementById("shortcuts-button").addEventListener("click", function () { dialog.showModal(); });
  document.getElementById("skip-reason").addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      event.preventDefault();
      const button = form.querySelector('button[value="skip"]');
      form.requestSubmit(button);
    }
  });

  updateApplicability();
  restore();
  updateApplicability();
  // The first dimension is current, but nothing takes focus on load: a focused category would
  // show its definition over the page before the annotator has done anything. The keys work
  // from the page itself.
  current = nextApplicable(0, 1);
  markCurrent();
})();
