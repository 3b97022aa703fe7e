import { NavLink } from 'react-router-dom';

export function Sidebar() {
  return (
    <aside className="sidebar">
      <strong className="sidebar__brand">Fleetdash</strong>
      <nav>
        <NavLink to="/devices">Devices</NavLink>
        <NavLink to="/settings">Settings</NavLink>
      </nav>
    </aside>
  );
}
