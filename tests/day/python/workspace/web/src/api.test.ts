import { afterEach, describe, expect, it, vi } from "vitest";
import { listInvoices } from "./api";

afterEach(() => vi.restoreAllMocks());

describe("listInvoices", () => {
  it("returns the parsed body", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify([{ id: 1 }]))));
    const invoices = await listInvoices();
    expect(invoices).toEqual([{ id: 1 }]);
  });

  it("throws on HTTP errors", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response("nope", { status: 500 })));
    await expect(listInvoices()).rejects.toThrow("GET /invoices failed: 500");
  });
});
