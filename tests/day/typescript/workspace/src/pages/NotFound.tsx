import { Link } from 'react-router-dom';

export function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <Link to="/devices">Back to devices</Link>
    </section>
  );
}
