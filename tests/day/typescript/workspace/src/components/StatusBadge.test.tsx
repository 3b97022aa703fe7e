import { render, screen } from '@testing-library/react';
import { StatusBadge } from './StatusBadge';

describe('StatusBadge', () => {
  it('shows a label for each status', () => {
    render(<StatusBadge status="degraded" />);
    expect(screen.getByText('Degraded')).toHaveClass('badge--degraded');
  });
});
