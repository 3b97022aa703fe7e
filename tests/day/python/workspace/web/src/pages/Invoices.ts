import { listInvoices } from "../api";
import { renderInvoiceTable } from "../components/InvoiceTable";

export async function mountInvoicesPage(root: HTMLElement): Promise<void> {
  root.innerHTML = "<p>Loading…</p>";
  try {
    const invoices = await listInvoices();
    root.replaceChildren(renderInvoiceTable(invoices));
  } catch (err) {
    root.innerHTML = `<p class="error">${String(err)}</p>`;
  }
}
