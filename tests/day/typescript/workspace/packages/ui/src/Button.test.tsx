import { render, screen } from '@testing-library/react';
import { Button } from './Button';

describe('Button', () => {
  it('defaults to primary', () => {
    render(<Button>Save</Button>);
    expect(screen.getByRole('button', { name: 'Save' })).toHaveClass('fd-btn--primary');
  });

  it('renders the danger kind', () => {
    render(<Button kind="danger">Delete</Button>);
    expect(screen.getByRole('button')).toHaveClass('fd-btn--danger');
  });
});
