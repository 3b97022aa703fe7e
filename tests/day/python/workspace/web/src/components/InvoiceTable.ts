import type { Invoice } from "../api";

export function renderInvoiceTable(invoices: Invoice[]): HTMLTableElement {
  const table = document.createElement("table");
  table.className = "invoices";
  const head = table.createTHead().insertRow();
  for (const label of ["Number", "Status", "Currency", "Due"]) {
    head.insertCell().textContent = label;
  }
  const body = table.createTBody();
  for (const inv of invoices) {
    const row = body.insertRow();
    row.dataset.status = inv.status;
    row.insertCell().textContent = inv.number;
    row.insertCell().textContent = inv.status;
    row.insertCell().textContent = inv.currency;
    row.insertCell().textContent = inv.due_on;
  }
  return table;
}
