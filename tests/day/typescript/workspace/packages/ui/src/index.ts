export { Button } from './Button';
export type { ButtonProps } from './Button';
export { Card } from './Card';
export { Spinner } from './Spinner';
