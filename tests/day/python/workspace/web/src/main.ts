import { mountInvoicesPage } from "./pages/Invoices";

const root = document.querySelector<HTMLElement>("#app");
if (root) {
  void mountInvoicesPage(root);
}
