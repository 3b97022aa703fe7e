import type { ReactNode } from 'react';

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="fd-card">
      <h2 className="fd-card__title">{title}</h2>
      {children}
    </section>
  );
}
