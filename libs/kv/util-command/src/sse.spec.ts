import { sseEvent } from './sse';

it('formats one data line per event and keeps line breaks out of it', () => {
  expect(sseEvent(['message', 'chat', '{"a":1}'])).toBe('data: message,chat,{"a":1}\n\n');
  expect(sseEvent(['message', 'c', 'a\nb\r\nc'])).toBe('data: message,c,a\\nb\\nc\n\n');
});
