import clsx from 'clsx';
import type { ButtonHTMLAttributes } from 'react';

export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  kind?: 'primary' | 'secondary' | 'danger';
  size?: 'sm' | 'md';
}

export function Button({ kind = 'primary', size = 'md', className, ...rest }: ButtonProps) {
  return (
    <button
      className={clsx(
        'fd-btn',
        kind === 'primary' && 'fd-btn--primary',
        kind === 'secondary' && 'fd-btn--secondary',
        kind === 'danger' && 'fd-btn--danger',
        size === 'sm' && 'fd-btn--sm',
        className,
      )}
      {...rest}
    />
  );
}
