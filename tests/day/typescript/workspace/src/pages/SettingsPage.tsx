import { Button, Card } from '@fleetdash/ui';
import { useLocalStorage } from '../hooks/useLocalStorage';

type Theme = 'light' | 'dark' | 'system';

export function SettingsPage() {
  const [theme, setTheme] = useLocalStorage<Theme>('fleetdash.theme', 'system');
  const [refresh, setRefresh] = useLocalStorage<number>('fleetdash.refreshSeconds', 30);

  return (
    <Card title="Settings">
      <label>
        Theme
        <select value={theme} onChange={(e) => setTheme(e.target.value as Theme)}>
          <option value="system">System</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </label>
      <label>
        Refresh every (s)
        <input
          type="number"
          min={5}
          value={refresh}
          onChange={(e) => setRefresh(Number(e.target.value))}
        />
      </label>
      <Button
        kind="secondary"
        onClick={() => {
          setTheme('system');
          setRefresh(30);
        }}
      >
        Reset
      </Button>
    </Card>
  );
}
