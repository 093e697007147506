// The scorecard's and the claims ledger's filter (lmcompanion.pages._filter): a button per verdict shows only the
// table rows whose badge (span.lmc-badge, data-outcome) has that verdict, opens every folded chapter that holds one
// and says how many rows are shown. "every row" shows them all again and folds the chapters back. Nothing is fetched.
document.addEventListener("DOMContentLoaded", () => {
  for (const bar of document.querySelectorAll("div.lmc-filter")) {
    const article = bar.closest("article") || document.body;
    const rows = [...article.querySelectorAll("details table tbody tr")];
    const said = bar.querySelector("output");
    const show = (outcome) => {
      let shown = 0;
      for (const row of rows) {
        const hit = !outcome || row.querySelector(`span.lmc-badge[data-outcome="${outcome}"]`) !== null;
        row.hidden = !hit;
        shown += hit;
      }
      for (const fold of article.querySelectorAll("details")) {
        const inside = [...fold.querySelectorAll("table tbody tr")];
        if (!inside.length) continue;
        fold.open = Boolean(outcome) && inside.some((row) => !row.hidden);
      }
      for (const button of bar.querySelectorAll("button")) {
        button.setAttribute("aria-pressed", String(button.dataset.outcome === outcome));
      }
      if (said) said.textContent = outcome ? `${shown} of ${rows.length} rows` : "";
    };
    bar.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (button) show(button.dataset.outcome);
    });
  }
});
