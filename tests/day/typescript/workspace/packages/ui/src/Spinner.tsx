export function Spinner({ label = 'Loading' }: { label?: string }) {
  return <div className="fd-spinner" role="status" aria-label={label} />;
}
