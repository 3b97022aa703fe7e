export type InvoiceStatus = "draft" | "sent" | "paid" | "void";

export interface Invoice {
  id: number;
  number: string;
  customer_id: number;
  status: InvoiceStatus;
  currency: string;
  issued_on: string;
  due_on: string;
}

const BASE = import.meta.env.VITE_API_URL ?? "http://localhost:8000";

export async function listInvoices(): Promise<Invoice[]> {
  const res = await fetch(`${BASE}/invoices`);
  if (!res.ok) {
    throw new Error(`GET /invoices failed: ${res.status}`);
  }
  return (await res.json()) as Invoice[];
}
