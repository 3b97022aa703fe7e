import { formatFirmware, formatRelative } from './format';

describe('formatRelative', () => {
  const now = new Date('2024-10-21T12:00:00Z');

  it('uses minutes under an hour', () => {
    expect(formatRelative('2024-10-21T11:45:00Z', now)).toBe('15 minutes ago');
  });

  it('says yesterday', () => {
    expect(formatRelative('2024-10-20T12:00:00Z', now)).toBe('yesterday');
  });
});

describe('formatFirmware', () => {
  it('adds a v prefix once', () => {
    expect(formatFirmware('2.4.1')).toBe('v2.4.1');
    expect(formatFirmware('v2.4.1')).toBe('v2.4.1');
  });
});
